package cmdline

import (
	"slices"
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
	// Background is set for a script's command that runs in the
	// background (cmd &): the script goes on while it runs.
	Background bool
}

// ParseOptions tunes ParseArgsWith.
type ParseOptions struct {
	// Env holds the env values that may be substituted for $(VAR), ${VAR}
	// and $VAR. Only allow-listed values should be given.
	Env map[string]string
	// Booleans lists flags that never take a value.
	Booleans map[string]bool
	// Scripts parses a shell script, as ParseScript does; nil is
	// ParseScript. A caller that reads the same scripts again gives one
	// that remembers them.
	Scripts func(src string) *Script
}

// ParseArgs splits a container's command and args into invocations with no env
// and no known boolean flags. See ParseArgsWith.
func ParseArgs(command, args []string) []Invocation {
	return ParseArgsWith(command, args, ParseOptions{})
}

// ParseArgsWith splits a container's command and args into invocations. The
// Kubernetes $(VAR) references are expanded first, as the kubelet does; a
// shell given a script with -c (sh -c, bash -exc, ...) contributes one
// invocation per simple command of the script, as mvdan.cc/sh parses it
// (quoting, escapes, here-documents, && and || chains, pipelines, if/for/
// while bodies and `exec`), with $VAR, ${VAR} and ${VAR:-default} taken
// from opt.Env. A script that does not parse contributes nothing.
func ParseArgsWith(command, args []string, opt ParseOptions) []Invocation {
	n := len(command) + len(args)
	if n == 0 {
		return nil
	}
	p := newArgParser(opt)
	words := make([]Word, 0, n)
	for i, c := range command {
		words = append(words, Word{Text: expandKube(c, opt.Env), Src: i})
	}
	for j, a := range args {
		words = append(words, Word{Text: expandKube(a, opt.Env), Src: len(command) + j})
	}
	if len(command) == 0 && !ShellArgs(args) {
		p.emit(Invocation{Words: words}, false)
	} else {
		p.argv(words, false, 0)
	}
	return p.out
}

// ParseScriptFile reads the commands of a shell script as ParseArgsWith
// reads those of a `sh -c` one: one invocation per simple command, its
// words read from the element script.Src. It is how a script a container
// runs from a file (command: [/scripts/start.sh]) is read.
func ParseScriptFile(script Word, opt ParseOptions) []Invocation {
	p := newArgParser(opt)
	p.script(script, 1)
	return p.out
}

// ParseWords reads words as the arguments of a program that is not among
// them (the value of VLLM_ADDITIONAL_ARGS, the args given to an image's
// entrypoint): an invocation with no Program, its words split into flags
// and positionals.
func ParseWords(words []Word, booleans map[string]bool) Invocation {
	p := argParser{opt: ParseOptions{Booleans: booleans}}
	p.emit(Invocation{Words: words}, false)
	return p.out[0]
}

// argParser splits argvs into invocations.
type argParser struct {
	opt   ParseOptions
	out   []Invocation
	shell func(string) *Script // parses a script
	bg    bool                 // the command being read runs in the background
}

// newArgParser is an argParser for opt.
func newArgParser(opt ParseOptions) argParser {
	p := argParser{opt: opt, shell: opt.Scripts}
	if p.shell == nil {
		p.shell = ParseScript
	}
	return p
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
	if IsShell(prog.Text) && depth < MaxShellDepth {
		if _, script := shellScript(words, wordText, 1); script >= 0 {
			p.script(words[script], depth)
			return
		}
	}
	p.emit(Invocation{Program: prog.Text, ProgramSrc: prog.Src, Words: words[1:]}, shell)
}

// script handles the commands of a shell script, all their words read
// from the element of script.
func (p *argParser) script(script Word, depth int) {
	sh := p.shell(script.Text)
	cmds := sh.Commands(p.opt.Env)
	n := 0
	for _, cmd := range cmds {
		n += len(cmd)
	}
	all := make([]Word, 0, n) // the words of every command, at once
	p.out = slices.Grow(p.out, len(cmds))
	outer := p.bg
	for i, cmd := range cmds {
		start := len(all)
		for _, c := range cmd {
			all = append(all, Word{Text: c, Src: script.Src})
		}
		p.bg = outer || i < len(sh.bg) && sh.bg[i]
		p.argv(all[start:len(all):len(all)], true, depth+1)
	}
	p.bg = outer
}

// skipWord reports words that precede the real program: VAR=value
// assignments, wrappers and shell keywords. A parsed script never has a
// keyword there (if, then, do are its syntax): only a command line whose
// first word is one skips it.
func skipWord(t string) bool {
	switch t {
	case "then", "do", "else", "elif", "if", "while", "until", "!", "{", "(":
		return true
	}
	_, _, assign := Assignment(t)
	return assign || IsWrapper(t)
}

// wordText is the text of w.
func wordText(w Word) string { return w.Text }

// emit adds an invocation, its words split into flags and positionals.
func (p *argParser) emit(inv Invocation, shell bool) {
	inv.Shell, inv.Background = shell, p.bg
	ws := inv.Words
	// Size the lists first: one allocation each.
	nf := 0
	for _, w := range ws {
		if IsFlag(w.Text) {
			nf++
		}
	}
	if nf > 0 {
		inv.Flags = make([]Flag, 0, nf)
	}
	if len(ws) > nf {
		inv.Positionals = make([]Word, 0, len(ws)-nf)
	}
	for a := range args(ws, wordText, p.opt.Booleans) {
		switch a.Kind {
		case ArgPositional, ArgOperand:
			inv.Positionals = append(inv.Positionals, ws[a.At])
		case ArgFlag:
			f := Flag{Name: a.Name, Src: ws[a.At].Src}
			if a.ValueAt >= 0 {
				f.Value, f.HasValue, f.ValueSrc = a.Value, true, ws[a.ValueAt].Src
			}
			inv.Flags = append(inv.Flags, f)
		}
	}
	p.out = append(p.out, inv)
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

// validEnvName reports a name the kubelet expands in $(NAME).
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

// window bounds the look-ahead for a variable name, so that a long run of
// unterminated "$(" or "${" stays linear.
func window(s string) string {
	const maxName = 256
	if len(s) > maxName {
		return s[:maxName]
	}
	return s
}
