package cmdline

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzShellSplit: any script splits without panicking into non-empty
// commands, and a script of plain words is those words, one command.
func FuzzShellSplit(f *testing.F) {
	for _, s := range []string{
		"bash /x.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); \n python3 -m vllm.entrypoints.openai.api_server --port 8080",
		`a "b c" 'd e' f\ g $HOME ${X:-def} ${Y} $(cmd arg) ` + "`q`" + ` 2>&1 >/dev/null | tee x; y && z || w # c`,
		"echo 2>x 3> y >&2 a&b", "", ";;;", "''", `"\$\"\\"`, "a\\\nb", "${", "$(", "$", "x${A}y$B",
		"cat <<EOF\nbody\nEOF\nrun", "plain words only",
	} {
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, s, v string) {
		env := map[string]string{"A": v, "B": "", "HOME": "/root", "X": v}
		cmds := shellSplit(s, env)
		for _, c := range cmds {
			if len(c) == 0 {
				t.Fatalf("shellSplit(%q): an empty command in %q", s, cmds)
			}
		}
		plain := strings.TrimSpace(s) != ""
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == ' ') {
				plain = false
				break
			}
		}
		if plain && !shellKeyword(strings.Fields(s)[0]) {
			if want := [][]string{strings.Fields(s)}; !reflect.DeepEqual(cmds, want) {
				t.Fatalf("shellSplit(%q) = %q, want %q", s, cmds, want)
			}
		}
	})
}

// shellKeyword: words that start a compound command rather than name a program.
func shellKeyword(w string) bool {
	switch w {
	case "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case", "esac",
		"function", "select", "time", "coproc", "declare", "local", "export", "readonly", "typeset", "nameref", "let":
		return true
	}
	return false
}

func TestShellSplit(t *testing.T) {
	env := map[string]string{"MODEL": "org/m", "EMPTY": "", "N": "2"}
	for _, tc := range []struct {
		in   string
		want [][]string
	}{
		{`python -m vllm.entrypoints.openai.api_server --model "$MODEL" --tp ${N}`, [][]string{{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "org/m", "--tp", "2"}}},
		{"a && b || c | d; e & f\ng", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"g"}}},
		{`x 'a b' "c $MODEL" d\ e`, [][]string{{"x", "a b", "c org/m", "d e"}}},
		{"run \\\n  --flag 1", [][]string{{"run", "--flag", "1"}}},
		{"${EMPTY:-def} ${EMPTY} $EMPTY ${UNSET} $UNSET ${UNSET:-d2}", [][]string{{"def", "${EMPTY}", "", "${UNSET}", "$UNSET", "d2"}}},
		{"cat <<EOF > /f\n--model secret\nEOF\nserve --x", [][]string{{"cat"}, {"serve", "--x"}}},
		{"if true; then exec vllm serve m; fi", [][]string{{"true"}, {"exec", "vllm", "serve", "m"}}},
		{"X=$(cat /t) && run $(which x) `b c`", [][]string{{"run", "$(which x)", "`b c`"}}},
		{"echo 'unterminated", nil},
	} {
		if got := shellSplit(tc.in, env); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("shellSplit(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// shellSplit is ParseScript(s).Commands(env): the commands of a script.
func shellSplit(s string, env map[string]string) [][]string {
	return ParseScript(s).Commands(env)
}
