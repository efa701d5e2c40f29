package transformer

import (
	"path"
	"strings"
)

// Word is one token of an invocation. Src is the index, in command followed by
// args, of the element it was read from (a whole `sh -c` script is one element).
type Word struct {
	Text string
	Src  int
}

// Flag is one parsed option: "--name value", "--name=value", "-n value" or a
// boolean "--name". Src and ValueSrc index command followed by args.
type Flag struct {
	Name     string
	Value    string
	HasValue bool
	Src      int
	ValueSrc int
}

// Invocation is one program run by a container: the container's own
// command+args, or one command of a shell script it runs.
type Invocation struct {
	// Program is argv[0]; "" when the container gives only args and relies on
	// the image ENTRYPOINT.
	Program    string
	ProgramSrc int
	// Words are argv[1:] (all of args when Program is "").
	Words       []Word
	Flags       []Flag
	Positionals []Word
	// Shell is set for invocations read from a `sh -c` script.
	Shell bool
}

// ParseOptions tunes ParseArgsWith.
type ParseOptions struct {
	// Env holds the env values that may be substituted for $(VAR), ${VAR}
	// and $VAR. Only allow-listed values should be given.
	Env map[string]string
	// Booleans lists flags that never take a value.
	Booleans map[string]bool
}

// maxShellDepth bounds `sh -c "sh -c '...'"` nesting.
const maxShellDepth = 4

// ParseArgs splits a container's command and args into invocations with no env
// and no known boolean flags. See ParseArgsWith.
func ParseArgs(command, args []string) []Invocation {
	return ParseArgsWith(command, args, ParseOptions{})
}

// ParseArgsWith splits a container's command and args into invocations. The
// Kubernetes $(VAR) references are expanded first, as the kubelet does; a
// shell given a script with -c (sh -c, bash -exc, ...) contributes one
// invocation per command of the script. Runs in time linear in the input.
func ParseArgsWith(command, args []string, opt ParseOptions) []Invocation {
	return parseArgs(command, args, opt, nil)
}

// argBufs is reusable memory for the words, flags and invocations of
// parseArgs; nil means fresh allocations.
type argBufs struct {
	words slab[Word]
	flags slab[Flag]
	invs  slab[Invocation]
}

func (b *argBufs) reset() {
	b.words.reset()
	b.flags.reset()
	b.invs.reset()
}

// parseArgs is ParseArgsWith cutting its slices from bufs when not nil; the
// invocations are then valid until bufs is reset.
func parseArgs(command, args []string, opt ParseOptions, bufs *argBufs) []Invocation {
	n := len(command) + len(args)
	if n == 0 {
		return nil
	}
	p := argParser{opt: opt, bufs: bufs}
	if bufs != nil {
		p.out = bufs.invs.take(4)
	}
	words := p.words(n)
	for i, c := range command {
		words = append(words, Word{Text: expandKube(c, opt.Env), Src: i})
	}
	for j, a := range args {
		words = append(words, Word{Text: expandKube(a, opt.Env), Src: len(command) + j})
	}
	if len(command) == 0 {
		p.emit(Invocation{Words: words}, false)
	} else {
		p.argv(words, false, 0)
	}
	return p.out
}

type argParser struct {
	opt  ParseOptions
	out  []Invocation
	bufs *argBufs
}

// words, flags and positionals return empty slices with room for n.
func (p *argParser) words(n int) []Word {
	if p.bufs != nil {
		return p.bufs.words.take(n)
	}
	return make([]Word, 0, n)
}

func (p *argParser) flags(n int) []Flag {
	if p.bufs != nil {
		return p.bufs.flags.take(n)
	}
	return make([]Flag, 0, n)
}

// argv handles one argv: strips assignments and wrappers, recurses into shell
// scripts, else parses flags.
func (p *argParser) argv(words []Word, shell bool, depth int) {
	for len(words) > 0 && skipWord(words[0].Text) {
		words = words[1:]
	}
	if len(words) == 0 {
		return
	}
	prog := words[0]
	if isShell(prog.Text) && depth < maxShellDepth {
		for i := 1; i < len(words); i++ {
			t := words[i].Text
			if len(t) < 2 || t[0] != '-' || strings.HasPrefix(t, "--") {
				break
			}
			if strings.IndexByte(t, 'c') > 0 && i+1 < len(words) {
				script := words[i+1]
				for _, cmd := range shellSplit(script.Text, p.opt.Env) {
					ws := p.words(len(cmd))
					for _, c := range cmd {
						ws = append(ws, Word{Text: c, Src: script.Src})
					}
					p.argv(ws, true, depth+1)
				}
				return
			}
		}
	}
	p.emit(Invocation{Program: prog.Text, ProgramSrc: prog.Src, Words: words[1:]}, shell)
}

// skipWord reports words that precede the real program: VAR=value
// assignments, exec/env/nohup wrappers and shell keywords.
func skipWord(t string) bool {
	switch t {
	case "exec", "env", "nohup", "time", "then", "do", "else", "elif", "if", "while", "until", "!", "{", "(":
		return true
	}
	if i := strings.IndexByte(t, '='); i > 0 && t[0] != '-' {
		for k := 0; k < i; k++ {
			c := t[k]
			if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || k > 0 && '0' <= c && c <= '9') {
				return false
			}
		}
		return true
	}
	return false
}

func isShell(prog string) bool {
	switch path.Base(prog) {
	case "sh", "bash", "ash", "dash", "zsh", "ksh":
		return true
	}
	return false
}

func (p *argParser) emit(inv Invocation, shell bool) {
	inv.Shell = shell
	ws := inv.Words
	// Size the lists first: one allocation each.
	nf := 0
	for _, w := range ws {
		if isFlag(w.Text) {
			nf++
		}
	}
	if nf > 0 {
		inv.Flags = p.flags(nf)
	}
	if len(ws) > nf {
		inv.Positionals = p.words(len(ws) - nf)
	}
	for i := 0; i < len(ws); i++ {
		t := ws[i].Text
		if t == "--" {
			inv.Positionals = append(inv.Positionals, ws[i+1:]...)
			break
		}
		if !isFlag(t) {
			inv.Positionals = append(inv.Positionals, ws[i])
			continue
		}
		f := Flag{Src: ws[i].Src}
		if name, val, ok := strings.Cut(t, "="); ok {
			f.Name, f.Value, f.HasValue, f.ValueSrc = name, val, true, ws[i].Src
		} else {
			f.Name = t
			if i+1 < len(ws) && !p.opt.Booleans[t] && !isFlag(ws[i+1].Text) {
				f.Value, f.HasValue, f.ValueSrc = ws[i+1].Text, true, ws[i+1].Src
				i++
			}
		}
		inv.Flags = append(inv.Flags, f)
	}
	p.out = append(p.out, inv)
}

// isFlag: starts with "-", is not "-" alone and is not a negative number.
func isFlag(t string) bool {
	if len(t) < 2 || t[0] != '-' {
		return false
	}
	c := t[1]
	return !(c >= '0' && c <= '9' || c == '.')
}

// expandKube applies the kubelet's $(VAR) expansion: $(VAR) becomes the value
// when VAR is known, $$ becomes $, anything else stays.
func expandKube(s string, env map[string]string) string {
	if !strings.Contains(s, "$") || len(env) == 0 && !strings.Contains(s, "$$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(window(s[i+2:]), ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := env[name]; ok && validEnvName(name) {
					b.WriteString(v)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// shellSplit is a small POSIX-shell tokenizer: quotes, backslash escapes,
// line continuations, comments, $VAR/${VAR} expansion from env, $(...) and
// backquotes kept as one word, and ; && || | & newlines ( ) as command
// separators. Redirections and their targets are dropped. One pass, linear.
func shellSplit(s string, env map[string]string) [][]string {
	// The bytes of every kept word go into one buffer that becomes one
	// string at the end; words and commands are cut from it.
	var (
		buf      []byte // the words so far; the current word is buf[start:]
		start    int
		spans    []int // start and end in buf of each kept word
		cmdEnds  []int // words (len(spans)/2) at the end of each command
		inWord   bool
		dropNext bool
	)
	endWord := func() {
		if !inWord {
			return
		}
		if dropNext {
			dropNext = false
			buf = buf[:start]
		} else {
			spans = append(spans, start, len(buf))
			start = len(buf)
		}
		inWord = false
	}
	endCmd := func() {
		endWord()
		dropNext = false
		last := 0
		if len(cmdEnds) > 0 {
			last = cmdEnds[len(cmdEnds)-1]
		}
		if n := len(spans) / 2; n > last {
			cmdEnds = append(cmdEnds, n)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\r':
			endWord()
		case '\n', ';', '|', '&', '(', ')':
			if c == '&' && len(buf) > start && inWord && buf[len(buf)-1] == '>' {
				buf = append(buf, c)
				continue
			}
			endCmd()
		case '>', '<':
			// Drop an fd number glued to the operator ("2>"), then the target.
			if inWord && isDigitBytes(buf[start:]) {
				buf = buf[:start]
				inWord = false
			} else {
				endWord()
			}
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&' || s[i+1] == '<') {
				i++
			}
			dropNext = true
		case '#':
			if inWord {
				buf = append(buf, c)
				continue
			}
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					buf = append(buf, s[i])
					inWord = true
				}
			}
		case '\'':
			inWord = true
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				buf = append(buf, s[i+1:]...)
				i = len(s)
			} else {
				buf = append(buf, s[i+1:i+1+end]...)
				i += 1 + end
			}
		case '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0:
					i++
					if s[i] != '\n' {
						buf = append(buf, s[i])
					}
				case s[i] == '$':
					i = expandShellVar(s, i, env, &buf)
				default:
					buf = append(buf, s[i])
				}
			}
		case '$':
			inWord = true
			i = expandShellVar(s, i, env, &buf)
		case '`':
			inWord = true
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				end = len(s) - i - 1
			}
			buf = append(buf, s[i:i+1+end]...)
			i += 1 + end
		default:
			inWord = true
			buf = append(buf, c)
		}
	}
	endCmd()
	if len(cmdEnds) == 0 {
		return nil
	}
	all := string(buf[:start])
	words := make([]string, len(spans)/2)
	for k := range words {
		words[k] = all[spans[2*k]:spans[2*k+1]]
	}
	cmds := make([][]string, len(cmdEnds))
	prev := 0
	for j, e := range cmdEnds {
		cmds[j] = words[prev:e:e]
		prev = e
	}
	return cmds
}

func isDigitBytes(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// expandShellVar handles the "$" at s[i] and returns the index of the last byte
// consumed. Unknown variables are kept as written.
func expandShellVar(s string, i int, env map[string]string, w *[]byte) int {
	if i+1 >= len(s) {
		*w = append(*w, '$')
		return i
	}
	switch c := s[i+1]; {
	case c == '{':
		end := strings.IndexByte(window(s[i+2:]), '}')
		if end < 0 {
			*w = append(*w, "${"...)
			return i + 1
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if v, ok := env[name]; ok && v != "" {
			*w = append(*w, v...)
		} else if hasDef {
			*w = append(*w, def...)
		} else {
			*w = append(*w, s[i:i+3+end]...)
		}
		return i + 2 + end
	case c == '(':
		// Command substitution (or an unknown $(VAR) the kubelet left): keep it whole.
		depth, j := 0, i+1
		for ; j < len(s); j++ {
			if s[j] == '(' {
				depth++
			} else if s[j] == ')' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j >= len(s) {
			j = len(s) - 1
		}
		*w = append(*w, s[i:j+1]...)
		return j
	case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
		j := i + 1
		for j < len(s) && (s[j] == '_' || 'A' <= s[j] && s[j] <= 'Z' || 'a' <= s[j] && s[j] <= 'z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		name := s[i+1 : j]
		if v, ok := env[name]; ok {
			*w = append(*w, v...)
		} else {
			*w = append(*w, s[i:j]...)
		}
		return j - 1
	}
	*w = append(*w, '$')
	return i
}

// window bounds the look-ahead for a variable name, so that a long run of
// unterminated "$(" or "${" stays linear.
func window(s string) string {
	const maxName = 256
	if len(s) > maxName {
		return s[:maxName]
	}
	return s
}

// unresolvedRef reports a value still holding a variable reference.
func unresolvedRef(s string) bool {
	return strings.Contains(s, "$(") || strings.Contains(s, "${") || (strings.IndexByte(s, '$') >= 0 && dollarName(s))
}

func dollarName(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' {
			c := s[i+1]
			if c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' {
				return true
			}
		}
	}
	return false
}
