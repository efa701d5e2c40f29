package cmdline

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Script is a shell script parsed by mvdan.cc/sh: its simple commands in
// source order, each a list of words. The parse does not depend on the
// env, so a caller that reads a script often (the transformer's Renderer)
// keeps it by the script's text and expands variables on every read; a
// Script is never modified once parsed and is safe for concurrent use.
type Script struct {
	cmds [][]shellWord
	// bg says, for each command, that it runs in the background of the
	// script (cmd &, or inside a backgrounded list).
	bg []bool
	// fixed holds the commands' words when the script reads no parameter:
	// they are the same on every render.
	fixed [][]string
}

// shellWord is one word: literal text and parameter expansions.
type shellWord []wordPart

// wordPart is literal text (lit; expansions other than parameters are kept
// as written) or a parameter: $name, ${name} or ${name:-def}.
type wordPart struct {
	lit    string
	param  bool
	name   string
	def    string
	hasDef bool
	braced bool
	raw    string // the parameter as written, kept when it has no value
}

// ParseShell parses a script with the grammar of bash, the one grammar
// bomstream reads scripts with: ParseScript for detection, and the
// collector's redaction, which rewrites the syntax tree and prints it back.
func ParseShell(src string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, fmt.Errorf("parse shell script: %w", err)
	}
	return f, nil
}

// ParseScript parses a script with the grammar of bash; one that does not
// parse has no commands.
func ParseScript(src string) *Script {
	s := &Script{}
	if strings.TrimSpace(src) == "" {
		return s
	}
	f, err := ParseShell(src)
	if err != nil {
		return s
	}
	// bgs holds, for each node being walked, whether it runs in the
	// background; Walk calls f(nil) once a node's children are done.
	bgs := []bool{false}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			bgs = bgs[:len(bgs)-1]
			return true
		}
		bg := bgs[len(bgs)-1]
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			// $(...) is one word of the command around it, not a command.
			return false
		case *syntax.Stmt:
			bg = bg || x.Background
		case *syntax.CallExpr:
			if len(x.Args) > 0 {
				cmd := make([]shellWord, 0, len(x.Args))
				for _, w := range x.Args {
					cmd = append(cmd, convertWord(w, src))
				}
				s.cmds = append(s.cmds, cmd)
				s.bg = append(s.bg, bg)
			}
		}
		bgs = append(bgs, bg)
		return true
	})
	if !s.readsParams() {
		s.fixed = s.expandWords(nil)
	}
	return s
}

// readsParams reports whether some word of the script reads a parameter.
func (s *Script) readsParams() bool {
	for _, cmd := range s.cmds {
		for _, w := range cmd {
			for _, p := range w {
				if p.param {
					return true
				}
			}
		}
	}
	return false
}

// convertWord reads one word of a parsed script: its literal parts and
// parameters.
func convertWord(w *syntax.Word, src string) shellWord {
	var out shellWord
	var parts func(ps []syntax.WordPart, quoted bool)
	parts = func(ps []syntax.WordPart, quoted bool) {
		for _, p := range ps {
			switch x := p.(type) {
			case *syntax.Lit:
				out = append(out, wordPart{lit: unescape(x.Value, quoted)})
			case *syntax.SglQuoted:
				out = append(out, wordPart{lit: x.Value})
			case *syntax.DblQuoted:
				parts(x.Parts, true)
			case *syntax.ParamExp:
				out = append(out, paramPart(x, src))
			default:
				out = append(out, wordPart{lit: Source(p, src)})
			}
		}
	}
	parts(w.Parts, false)
	return out
}

// paramPart reads $name, ${name} and ${name:-def}; any other parameter
// expansion is kept as written.
func paramPart(x *syntax.ParamExp, src string) wordPart {
	raw := Source(x, src)
	if x.Param == nil || x.Excl || x.Length || x.Width || x.IsSet || x.Flags != nil || x.NestedParam != nil ||
		x.Index != nil || len(x.Modifiers) > 0 || x.Slice != nil || x.Repl != nil || x.Names != 0 {
		return wordPart{lit: raw}
	}
	p := wordPart{param: true, name: x.Param.Value, braced: !x.Short, raw: raw}
	if x.Exp != nil {
		if x.Exp.Op != syntax.DefaultUnsetOrNull {
			return wordPart{lit: raw}
		}
		p.hasDef = true
		if x.Exp.Word != nil {
			for _, d := range convertWord(x.Exp.Word, src) {
				if d.param {
					d.lit = d.raw
				}
				p.def += d.lit
			}
		}
	}
	return p
}

// unescape removes the backslashes of an unquoted or double-quoted literal
// as the shell does; a backslash-newline joins lines.
func unescape(s string, quoted bool) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !quoted || strings.IndexByte("\"\\$`", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Source is the text of n, a node of the script src, as written there;
// "" when n's position lies outside src.
func Source(n syntax.Node, src string) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}

// Commands returns the script's commands as words, with parameters
// replaced by their env values: $name when set, ${name} when set and not
// empty, ${name:-def} else def; an unknown parameter stays as written. The
// words of a script that reads no parameter are shared: callers must not
// modify them.
func (s *Script) Commands(env map[string]string) [][]string {
	if s.fixed != nil {
		return s.fixed
	}
	return s.expandWords(env)
}

// expandWords is Commands, making new words.
func (s *Script) expandWords(env map[string]string) [][]string {
	if len(s.cmds) == 0 {
		return nil
	}
	out := make([][]string, len(s.cmds))
	for i, cmd := range s.cmds {
		words := make([]string, len(cmd))
		for j, w := range cmd {
			words[j] = w.expand(env)
		}
		out[i] = words
	}
	return out
}

// expand is the word with its parameters replaced (see Script.Commands).
func (w shellWord) expand(env map[string]string) string {
	if len(w) == 1 && !w[0].param {
		return w[0].lit
	}
	var b strings.Builder
	for _, p := range w {
		if !p.param {
			b.WriteString(p.lit)
			continue
		}
		v, ok := env[p.name]
		switch {
		case ok && (v != "" || !p.braced && !p.hasDef):
			b.WriteString(v)
		case p.hasDef:
			b.WriteString(p.def)
		default:
			b.WriteString(p.raw)
		}
	}
	return b.String()
}
