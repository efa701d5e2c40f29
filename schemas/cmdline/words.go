package cmdline

import (
	"iter"
	"path"
	"regexp"
	"strings"
)

// MaxShellDepth bounds `sh -c "sh -c '...'"` nesting: a script deeper than
// this is not read as commands.
const MaxShellDepth = 4

// IsFlag reports a word that is a flag: it starts with "-", is not "-"
// alone and is not a negative number ("-1", "-.5").
func IsFlag(t string) bool {
	if len(t) < 2 || t[0] != '-' {
		return false
	}
	c := t[1]
	return !(c >= '0' && c <= '9' || c == '.')
}

// IsShell reports a program that is a POSIX shell (sh, bash, ash, dash,
// zsh, ksh, under any directory).
func IsShell(prog string) bool {
	switch path.Base(prog) {
	case "sh", "bash", "ash", "dash", "zsh", "ksh":
		return true
	}
	return false
}

// IsPython reports a program that is a Python interpreter (python,
// python3, python3.12, under any directory): its -c value is a script.
func IsPython(prog string) bool { return pythonProgram.MatchString(path.Base(prog)) }

// pythonProgram names a Python interpreter.
var pythonProgram = regexp.MustCompile(`^python[0-9.]*$`)

// ShellArgs reports args that run a shell script themselves ("sh", "-c",
// SCRIPT): whatever the image's entrypoint, with none (a model image) or
// one that runs its arguments, the script is what runs. They are read as
// a command line that names its program.
func ShellArgs(args []string) bool {
	if len(args) < 3 || !IsShell(args[0]) {
		return false
	}
	f := args[1]
	return len(f) >= 2 && f[0] == '-' && f[1] != '-' && strings.IndexByte(f, 'c') > 0
}

// IsWrapper reports a word that runs the program after it: exec, env,
// nohup, time.
func IsWrapper(t string) bool {
	switch t {
	case "exec", "env", "nohup", "time":
		return true
	}
	return false
}

// Assignment splits a word VAR=value that sets a variable for the program
// after it; ok is false for any other word (a flag "--x=y", "=y", "a-b=c").
func Assignment(t string) (name, value string, ok bool) {
	i := strings.IndexByte(t, '=')
	if i <= 0 || t[0] == '-' {
		return "", "", false
	}
	for k := range i {
		c := t[k]
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || k > 0 && '0' <= c && c <= '9') {
			return "", "", false
		}
	}
	return t[:i], t[i+1:], true
}

// ShellScript reads the options of a shell, words[i:] being the words
// after the shell's name. The options come first: words of one dash and
// at least one letter ("-e", "-exc", not "--"). When one of them holds a
// "c" after its dash and a word follows it, that word is the script,
// unless it is "--", which ends the options: then the script is the word
// after it. ShellScript returns the index of the script, and end, the
// index of the first word after the options (the script's, when there is
// one); script is -1 when no option runs a script.
func ShellScript(words []string, i int) (end, script int) {
	return shellScript(words, func(w string) string { return w }, i)
}

// shellScript is ShellScript for words of any type, text giving each
// word's text.
func shellScript[W any](words []W, text func(W) string, i int) (end, script int) {
	for ; i < len(words); i++ {
		t := text(words[i])
		if len(t) < 2 || t[0] != '-' || strings.HasPrefix(t, "--") {
			break
		}
		if strings.IndexByte(t, 'c') > 0 && i+1 < len(words) {
			if text(words[i+1]) == "--" && i+2 < len(words) {
				i++
			}
			return i + 1, i + 1
		}
	}
	return i, -1
}

// ArgKind says what an Arg is.
type ArgKind uint8

const (
	// ArgPositional is a word that is no flag and no flag's value.
	ArgPositional ArgKind = iota
	// ArgFlag is a flag, with its value when it has one.
	ArgFlag
	// ArgEnd is the word "--", which ends the options.
	ArgEnd
	// ArgOperand is a word after "--": a positional, even one that
	// starts with "-".
	ArgOperand
)

// Arg is one argument of a program: a flag with its value, a positional,
// "--" or a word after it.
type Arg struct {
	Kind ArgKind
	// At is the index of the argument's word; ValueAt is that of a
	// flag's value: At for "--name=value", At+1 for "--name value", -1
	// when the flag has none (a boolean flag, a flag followed by another
	// flag or by nothing).
	At, ValueAt int
	// Name is the flag ("--model", "-m"); "" for any other kind.
	Name string
	// Value is the flag's value, or the word of any other kind.
	Value string
}

// Args reads words, the words after a program's name, as its arguments,
// in order. A word "--name=value" is a flag with its value; a flag
// without "=" takes the next word as its value, unless booleans holds the
// flag or the next word is a flag itself. "--" ends the options: every
// word after it is an ArgOperand.
func Args(words []string, booleans map[string]bool) iter.Seq[Arg] {
	return args(words, func(w string) string { return w }, booleans)
}

// args is Args for words of any type, text giving each word's text.
func args[W any](words []W, text func(W) string, booleans map[string]bool) iter.Seq[Arg] {
	return func(yield func(Arg) bool) {
		for i := 0; i < len(words); i++ {
			t := text(words[i])
			if t == "--" {
				if !yield(Arg{Kind: ArgEnd, At: i, ValueAt: -1, Value: t}) {
					return
				}
				for j := i + 1; j < len(words); j++ {
					if !yield(Arg{Kind: ArgOperand, At: j, ValueAt: -1, Value: text(words[j])}) {
						return
					}
				}
				return
			}
			a := Arg{Kind: ArgPositional, At: i, ValueAt: -1, Value: t}
			if IsFlag(t) {
				a = readFlag(words, text, booleans, i)
				i = max(i, a.ValueAt)
			}
			if !yield(a) {
				return
			}
		}
	}
}

// readFlag reads the flag words[i] and its value.
func readFlag[W any](words []W, text func(W) string, booleans map[string]bool, i int) Arg {
	t := text(words[i])
	a := Arg{Kind: ArgFlag, At: i, ValueAt: -1, Name: t}
	if name, val, ok := strings.Cut(t, "="); ok {
		a.Name, a.Value, a.ValueAt = name, val, i
	} else if i+1 < len(words) && !booleans[t] {
		if v := text(words[i+1]); !IsFlag(v) {
			a.Value, a.ValueAt = v, i+1
		}
	}
	return a
}
