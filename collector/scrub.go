package collector

import (
	pathpkg "path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

// Redacted replaces every value the collector removes: schemas.RedactedValue.
const Redacted = schemas.RedactedValue

// argRedactor redacts command lines by allow-list: a flag keeps its value
// only when a detection rule reads it (schemas.Arguments.ValueFlags, plus
// Config.ArgAllow); every other flag keeps its name and its value becomes
// Redacted. It reads a command line with package cmdline, the reader the
// transformer detects with: the same program, flags, values and boolean
// flags, the same shells and scripts. So a redacted word is never read as
// something else. Positionals, kept values and the parts of a script that
// are not arguments go through schemas.RedactText. Shell scripts (sh -c,
// bash -exc, ...) are parsed by cmdline.ParseShell and redacted word by
// word, so quoting cannot hide a value; a script that does not parse is
// replaced whole. It is safe for concurrent use.
type argRedactor struct {
	values   map[string]bool // flags whose values are kept
	booleans map[string]bool // flags that never take a value
	argsEnv  map[string]bool // env vars holding more arguments
	envAllow envAllowList    // assignments (VAR=value) whose values are kept
	// pyCalls and pyKeywords: what of a python -c script is kept.
	pyCalls, pyKeywords []string
}

func newArgRedactor(decl schemas.Arguments, argAllow []string, envAllow envAllowList) *argRedactor {
	r := &argRedactor{values: map[string]bool{}, booleans: map[string]bool{}, argsEnv: map[string]bool{}, envAllow: envAllow}
	for _, f := range append(append([]string(nil), decl.ValueFlags...), argAllow...) {
		r.values[f] = true
	}
	for _, f := range decl.BooleanFlags {
		r.booleans[f] = true
	}
	for _, e := range decl.ArgsEnv {
		r.argsEnv[e] = true
	}
	r.pyCalls, r.pyKeywords = decl.PythonCalls, decl.PythonKeywords
	return r
}

// command redacts a container's command and args, read as one argv as the
// kubelet runs them. With no command the args go to the image's entrypoint:
// there is no program, every word is a flag, a value or a positional.
func (r *argRedactor) command(command, args []string) ([]string, []string) {
	if len(command)+len(args) == 0 {
		return command, args
	}
	words := make([]string, 0, len(command)+len(args))
	words = append(append(words, command...), args...)
	out := r.argv(words, len(command) > 0 || cmdline.ShellArgs(args), 0)
	var c, a []string
	if command != nil {
		c = out[:len(command):len(command)]
	}
	if args != nil {
		a = out[len(command):]
	}
	return c, a
}

// argv returns words with every value no rule reads redacted. program says
// whether words[0] (after assignments and wrappers) is the program run.
func (r *argRedactor) argv(words []string, program bool, depth int) []string {
	out := make([]string, len(words))
	i, python := 0, false
	if program {
		var done bool
		if i, python, done = r.program(words, out, depth); done {
			return out
		}
	}
	r.flags(words, out, i, python, depth)
	return out
}

// program redacts, into out, the words up to the program run (wrappers
// such as exec or env, VAR=value assignments) and the program itself. It
// returns the index of the word after the program, whether the program is
// a Python interpreter, and done when out is complete: there is no
// program, its words are data, or it is a shell running a script.
func (r *argRedactor) program(words, out []string, depth int) (next int, python, done bool) {
	i := 0
	for ; i < len(words); i++ {
		w := words[i]
		if cmdline.IsWrapper(w) {
			out[i] = w
			continue
		}
		if name, val, ok := cmdline.Assignment(w); ok {
			out[i] = schemas.RedactText(name) + "=" + r.assignValue(name, val)
			continue
		}
		break
	}
	if i >= len(words) {
		return i, false, true
	}
	prog := words[i]
	out[i] = schemas.RedactText(prog)
	python = cmdline.IsPython(prog)
	i++
	if dataProgram(prog) {
		// Its words are data it prints or stores, never configuration
		// a rule reads: "echo $PW | login --password-stdin".
		for ; i < len(words); i++ {
			if cmdline.IsFlag(words[i]) {
				out[i] = schemas.RedactText(words[i])
			} else {
				out[i] = redactValue(words[i])
			}
		}
		return i, python, true
	}
	if cmdline.IsShell(prog) && depth < cmdline.MaxShellDepth {
		i, done = r.shellOptions(words, out, i, depth)
	}
	return i, python, done
}

// shellOptions redacts, into out, the options of a shell from words[i] on.
// When one of them runs a script (-c, -exc, ...), the script and the words
// after it ($0 and the script's positional parameters) are redacted too and
// done is true; else next is the first word after the options.
func (r *argRedactor) shellOptions(words, out []string, i, depth int) (next int, done bool) {
	end, script := cmdline.ShellScript(words, i)
	for ; i < end; i++ {
		out[i] = schemas.RedactText(words[i]) // an option, or the "--" before a script
	}
	if script < 0 {
		return end, false
	}
	out[script] = r.script(words[script], true, depth+1)
	// $0 and the script's positional parameters: no rule reads them, but
	// they are words like any others.
	copy(out[script+1:], r.argv(words[script+1:], false, depth))
	return script, true
}

// flags redacts, into out, the words from words[i] on: flags, their
// values and positionals. python says whether the program is a Python
// interpreter (its -c value is a script).
func (r *argRedactor) flags(words, out []string, i int, python bool, depth int) {
	out = out[i:]
	for a := range cmdline.Args(words[i:], r.booleans) {
		switch {
		case a.Kind == cmdline.ArgEnd:
			out[a.At] = a.Value
		case a.Kind == cmdline.ArgOperand:
			out[a.At] = schemas.RedactText(a.Value)
		case a.Kind == cmdline.ArgPositional:
			out[a.At] = r.positional(a.Value, depth)
		case a.ValueAt == a.At: // --name=value
			if r.values[a.Name] || storageURI.MatchString(a.Value) {
				out[a.At] = schemas.RedactText(a.Name) + "=" + schemas.RedactText(a.Value)
			} else {
				out[a.At] = schemas.RedactText(a.Name) + "=" + redactValue(a.Value)
			}
		default:
			out[a.At] = r.flag(a.Name)
			if a.ValueAt >= 0 {
				out[a.ValueAt] = r.flagValue(a.Name, a.Value, python)
			}
		}
	}
}

// flag is a flag word without "=": kept when a rule reads its value, when
// it takes none or is a short flag alone; a long flag goes through
// RedactText.
func (r *argRedactor) flag(t string) string {
	switch {
	case r.values[t] || r.booleans[t] || len(t) <= 2:
		return t
	case strings.HasPrefix(t, "--"):
		return schemas.RedactText(t)
	}
	// "-pVALUE": a short flag with its value glued on, or a
	// single-dash long flag; either way only "-p" is safe.
	return t[:2] + Redacted
}

// flagValue is what remains of v, the word after the flag t.
func (r *argRedactor) flagValue(t, v string, python bool) string {
	switch {
	case r.values[t]:
		return schemas.RedactText(v)
	case python && t == "-c":
		// A Python script: only the calls a rule reads, with their
		// literal arguments.
		if s := schemas.PythonCallsText(v, r.pyCalls, r.pyKeywords); s != "" {
			return s
		}
		return Redacted
	case storageURI.MatchString(v):
		// Where a model is stored, its credentials stripped: no
		// secret of its own (aws s3 cp --recursive s3://...).
		return schemas.RedactText(v)
	}
	return redactValue(v)
}

// storageURI is a model store location: its value is kept, through
// RedactText, even as the value of a flag no rule reads.
var storageURI = regexp.MustCompile(`^(s3|gs|gcs|hf|huggingface|oci|pvc|azureblob|abfss|az|oss)://|^https://huggingface\.co/`)

// positional redacts a positional word. One with blanks may be a script
// handed to an entrypoint that is a shell (args: ["vllm serve m --key x"]
// under ENTRYPOINT ["sh", "-c"]): when it parses as one and redaction
// changes it, it is redacted as one; otherwise it goes through RedactText.
func (r *argRedactor) positional(t string, depth int) string {
	if depth < cmdline.MaxShellDepth && strings.ContainsAny(t, " \t\n") {
		red, changed, ok := r.parsedScript(t, true, depth+1)
		switch {
		case ok && changed:
			if cmdline.IsFlag(red) {
				// Still a positional for whoever parses the argv next.
				red = " " + red
			}
			return schemas.RedactText(red)
		case !ok && flagInside.MatchString(t):
			// A script with options that does not parse: nothing in it
			// can be told apart safely.
			return Redacted
		}
	}
	return schemas.RedactText(t)
}

// flagInside: a word with an option inside, after a blank.
var flagInside = regexp.MustCompile(`\s-[A-Za-z-]`)

// headerRE is a header-style value: "Name: value".
var headerRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*:[ \t]`)

// redactValue is what remains of the value of a flag no rule reads: nothing
// (Redacted), or the name of a header ("X-Api-Key: REDACTED") when the name
// holds no secret itself. An empty value stays empty.
func redactValue(v string) string {
	if v == "" || v == Redacted {
		return v
	}
	if m := headerRE.FindString(v); m != "" && schemas.RedactText(m) == m {
		return m + Redacted
	}
	return Redacted
}

// assignValue is the value kept for VAR=value: the value of an allow-listed
// variable (still passed through RedactText), else Redacted.
func (r *argRedactor) assignValue(name, val string) string {
	if val == "" {
		return val
	}
	if r.envAllow.has(name) {
		if red := schemas.RedactText(val); red == val {
			return val
		}
	}
	return Redacted
}

// script redacts a shell script: every command's arguments as argv (program
// says whether each command names its program, which the words of an argsEnv
// value do not), assignments by the env allow-list, here-documents whole, and
// every other word through RedactText. Comments are dropped. The result is
// the script printed back by mvdan.cc/sh; a script that does not parse
// becomes Redacted.
func (r *argRedactor) script(src string, program bool, depth int) string {
	red, _, ok := r.parsedScript(src, program, depth)
	if !ok {
		return Redacted
	}
	return red
}

// parsedScript is script, with ok false when src does not parse and changed
// saying whether anything was redacted (the script printed as it was parsed
// differs from the one printed after redaction).
func (r *argRedactor) parsedScript(src string, program bool, depth int) (out string, changed, ok bool) {
	if strings.TrimSpace(src) == "" {
		return src, false, true
	}
	f, err := cmdline.ParseShell(src)
	if err != nil {
		return "", false, false
	}
	var orig strings.Builder
	if err := syntax.NewPrinter().Print(&orig, f); err != nil {
		return "", false, false
	}
	replace := func(w *syntax.Word, text string) {
		q, err := syntax.Quote(text, syntax.LangBash)
		if err != nil {
			q = Redacted
		}
		w.Parts = []syntax.WordPart{&syntax.Lit{Value: q}}
	}
	assigns := func(as []*syntax.Assign) {
		for _, a := range as {
			if a.Name == nil || a.Value == nil {
				continue
			}
			text := wordText(a.Value, src)
			if red := r.assignValue(a.Name.Value, text); red != text {
				replace(a.Value, red)
			}
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			assigns(x.Assigns)
			texts := make([]string, len(x.Args))
			for i, w := range x.Args {
				texts[i] = wordText(w, src)
			}
			red := r.argv(texts, program, depth)
			for i, w := range x.Args {
				if red[i] != texts[i] {
					replace(w, red[i])
				}
			}
		case *syntax.DeclClause:
			assigns(x.Args)
		case *syntax.Redirect:
			if x.Hdoc != nil {
				x.Hdoc.Parts = []syntax.WordPart{&syntax.Lit{Value: Redacted + "\n"}}
			}
		case *syntax.Lit:
			x.Value = schemas.RedactText(x.Value)
		case *syntax.SglQuoted:
			x.Value = schemas.RedactText(x.Value)
		}
		return true
	})
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		return "", false, false
	}
	return strings.TrimSuffix(b.String(), "\n"), b.String() != orig.String(), true
}

// wordText is what a word expands to with every expansion left as written:
// quotes removed, parameters and command substitutions kept as source text.
func wordText(w *syntax.Word, src string) string {
	if lit := w.Lit(); lit != "" {
		return lit
	}
	var b strings.Builder
	var parts func([]syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch x := p.(type) {
			case *syntax.Lit:
				b.WriteString(x.Value)
			case *syntax.SglQuoted:
				b.WriteString(x.Value)
			case *syntax.DblQuoted:
				parts(x.Parts)
			default:
				b.WriteString(cmdline.Source(p, src))
			}
		}
	}
	parts(w.Parts)
	return b.String()
}

// dataProgram: a program whose arguments are data (printed, stored as a
// password) rather than configuration.
func dataProgram(prog string) bool {
	switch pathpkg.Base(prog) {
	case "echo", "printf", "htpasswd", "chpasswd", "sshpass":
		return true
	}
	return false
}
