package transformer

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzShellSplit compares shellSplit with shellSplitRef, the tokenizer it
// replaced.
func FuzzShellSplit(f *testing.F) {
	for _, s := range []string{
		"bash /x.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); \n python3 -m vllm.entrypoints.openai.api_server --port 8080",
		`a "b c" 'd e' f\ g $HOME ${X:-def} ${Y} $(cmd arg) ` + "`q`" + ` 2>&1 >/dev/null | tee x; y && z || w # c`,
		"echo 2>x 3> y >&2 a&b", "", ";;;", "''", `"\$\"\\"`, "a\\\nb", "${", "$(", "$", "x${A}y$B",
	} {
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, s, v string) {
		env := map[string]string{"A": v, "B": "", "HOME": "/root", "X": v}
		got, want := shellSplit(s, env), shellSplitRef(s, env)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shellSplit(%q) = %q, want %q", s, got, want)
		}
	})
}

// shellSplitRef is shellSplit as it was before it built all words in one
// buffer: the reference FuzzShellSplit compares against.
func shellSplitRef(s string, env map[string]string) [][]string {
	var (
		cmds     [][]string
		cur      []string
		word     strings.Builder
		inWord   bool
		dropNext bool
	)
	endWord := func() {
		if !inWord {
			return
		}
		if dropNext {
			dropNext = false
		} else {
			cur = append(cur, word.String())
		}
		word.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		dropNext = false
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\r':
			endWord()
		case '\n', ';', '|', '&', '(', ')':
			if c == '&' && word.Len() > 0 && inWord && endsWithRef(&word, '>') {
				word.WriteByte(c)
				continue
			}
			endCmd()
		case '>', '<':
			// Drop an fd number glued to the operator ("2>"), then the target.
			if inWord && isDigitsRef(word.String()) {
				word.Reset()
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
				word.WriteByte(c)
				continue
			}
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					word.WriteByte(s[i])
					inWord = true
				}
			}
		case '\'':
			inWord = true
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				word.WriteString(s[i+1:])
				i = len(s)
			} else {
				word.WriteString(s[i+1 : i+1+end])
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
						word.WriteByte(s[i])
					}
				case s[i] == '$':
					i = expandShellVarRef(s, i, env, &word)
				default:
					word.WriteByte(s[i])
				}
			}
		case '$':
			inWord = true
			i = expandShellVarRef(s, i, env, &word)
		case '`':
			inWord = true
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				end = len(s) - i - 1
			}
			word.WriteString(s[i : i+1+end])
			i += 1 + end
		default:
			inWord = true
			word.WriteByte(c)
		}
	}
	endCmd()
	return cmds
}

func endsWithRef(b *strings.Builder, c byte) bool {
	s := b.String()
	return s != "" && s[len(s)-1] == c
}

func isDigitsRef(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// expandShellVar handles the "$" at s[i] and returns the index of the last byte
// consumed. Unknown variables are kept as written.
func expandShellVarRef(s string, i int, env map[string]string, w *strings.Builder) int {
	if i+1 >= len(s) {
		w.WriteByte('$')
		return i
	}
	switch c := s[i+1]; {
	case c == '{':
		end := strings.IndexByte(window(s[i+2:]), '}')
		if end < 0 {
			w.WriteString("${")
			return i + 1
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if v, ok := env[name]; ok && v != "" {
			w.WriteString(v)
		} else if hasDef {
			w.WriteString(def)
		} else {
			w.WriteString(s[i : i+3+end])
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
		w.WriteString(s[i : j+1])
		return j
	case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
		j := i + 1
		for j < len(s) && (s[j] == '_' || 'A' <= s[j] && s[j] <= 'Z' || 'a' <= s[j] && s[j] <= 'z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		name := s[i+1 : j]
		if v, ok := env[name]; ok {
			w.WriteString(v)
		} else {
			w.WriteString(s[i:j])
		}
		return j - 1
	}
	w.WriteByte('$')
	return i
}

// FuzzParseArgsBuffers: parseArgs cutting its slices from reused buffers
// gives what ParseArgsWith gives with fresh ones.
func FuzzParseArgsBuffers(f *testing.F) {
	f.Add("sh", "-c", "bash /x.sh leader --ray_cluster_size=$(N); python3 -m vllm.entrypoints.openai.api_server --port 8080 -- --x", "--model=a")
	f.Add("vllm", "serve", "org/m", "--tensor-parallel-size")
	f.Add("", "serve", "--flag", "-1")
	bufs := &argBufs{}
	opt := ParseOptions{Env: map[string]string{"N": "2"}, Booleans: map[string]bool{"--enforce-eager": true}}
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		var command, args []string
		if a != "" {
			command = []string{a, b}
		}
		args = []string{c, d}
		for round := 0; round < 2; round++ {
			got := parseArgs(command, args, opt, bufs)
			want := ParseArgsWith(command, args, opt)
			if !sameInvocations(got, want) {
				t.Fatalf("parseArgs(%q, %q) = %+v, want %+v", command, args, got, want)
			}
			bufs.reset()
		}
	})
}

// sameInvocations compares invocations, an empty list equal to a nil one.
func sameInvocations(a, b []Invocation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Program != y.Program || x.ProgramSrc != y.ProgramSrc || x.Shell != y.Shell ||
			len(x.Words)+len(y.Words) > 0 && !reflect.DeepEqual(x.Words, y.Words) ||
			len(x.Flags)+len(y.Flags) > 0 && !reflect.DeepEqual(x.Flags, y.Flags) ||
			len(x.Positionals)+len(y.Positionals) > 0 && !reflect.DeepEqual(x.Positionals, y.Positionals) {
			return false
		}
	}
	return true
}
