package cmdline

import (
	"reflect"
	"slices"
	"testing"
)

// The words of the grammar, as detection (ParseArgsWith) and redaction
// (the collector's argRedactor) both read them.
func TestWords(t *testing.T) {
	for t2, want := range map[string]bool{
		"--model": true, "-m": true, "-pVALUE": true, "--x=y": true, "--": true,
		"-": false, "-1": false, "-.5": false, "model": false, "": false,
	} {
		if IsFlag(t2) != want {
			t.Errorf("IsFlag(%q) = %v, want %v", t2, !want, want)
		}
	}
	for prog, want := range map[string]bool{
		"sh": true, "/bin/bash": true, "/usr/bin/zsh": true, "dash": true, "ksh": true, "ash": true,
		"fish": false, "bashful": false, "python": false,
	} {
		if IsShell(prog) != want {
			t.Errorf("IsShell(%q) = %v, want %v", prog, !want, want)
		}
	}
	for prog, want := range map[string]bool{
		"python": true, "python3": true, "/usr/bin/python3.12": true,
		"ipython": false, "pythonx": false, "py": false,
	} {
		if IsPython(prog) != want {
			t.Errorf("IsPython(%q) = %v, want %v", prog, !want, want)
		}
	}
	for w, want := range map[string]bool{"exec": true, "env": true, "nohup": true, "time": true, "then": false, "sudo": false} {
		if IsWrapper(w) != want {
			t.Errorf("IsWrapper(%q) = %v, want %v", w, !want, want)
		}
	}
	for _, tc := range []struct {
		word, name, value string
		ok                bool
	}{
		{"HF_TOKEN=abc", "HF_TOKEN", "abc", true},
		{"_x1=", "_x1", "", true},
		{"A=b=c", "A", "b=c", true},
		{"--a=b", "", "", false},
		{"1A=b", "", "", false},
		{"a-b=c", "", "", false},
		{"=x", "", "", false},
		{"plain", "", "", false},
	} {
		name, value, ok := Assignment(tc.word)
		if name != tc.name || value != tc.value || ok != tc.ok {
			t.Errorf("Assignment(%q) = %q, %q, %v", tc.word, name, value, ok)
		}
	}
}

// A shell's options and the script one of them runs.
func TestShellScript(t *testing.T) {
	for _, tc := range []struct {
		args        []string // after the shell
		end, script int
	}{
		{[]string{"-c", "S"}, 1, 1},
		{[]string{"-e", "-x", "-c", "S", "$0", "a"}, 3, 3},
		{[]string{"-exc", "S"}, 1, 1},
		{[]string{"-ec", "--", "S"}, 2, 2}, // "--" ends the options
		{[]string{"-c", "--"}, 1, 1},       // nothing after "--": it is the script
		{[]string{"-c"}, 1, -1},            // no script follows
		{[]string{"--c", "S"}, 0, -1},      // a long option runs nothing
		{[]string{"-e", "run.sh"}, 1, -1},
		{[]string{"c", "S"}, 0, -1},
		{nil, 0, -1},
	} {
		end, script := ShellScript(tc.args, 0)
		if end != tc.end || script != tc.script {
			t.Errorf("ShellScript(%q) = %d, %d; want %d, %d", tc.args, end, script, tc.end, tc.script)
		}
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"sh", "-c", "x"}, true},
		{[]string{"/usr/bin/bash", "-ec", "x"}, true},
		{[]string{"sh", "-c"}, false},
		{[]string{"sh", "--c", "x"}, false},
		{[]string{"sh", "-e", "x"}, false},
		{[]string{"python", "-c", "x"}, false},
	} {
		if got := ShellArgs(tc.args); got != tc.want {
			t.Errorf("ShellArgs(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// Flags, values and positionals, each at the index of its word.
func TestArgs(t *testing.T) {
	words := []string{"serve", "org/m", "--tp=4", "--max-model-len", "8192", "--enforce-eager", "pos",
		"--seed", "-1", "-q", "--port", "-pVALUE", "--x=", "--", "--z", "w"}
	want := []Arg{
		{Kind: ArgPositional, At: 0, ValueAt: -1, Value: "serve"},
		{Kind: ArgPositional, At: 1, ValueAt: -1, Value: "org/m"},
		{Kind: ArgFlag, At: 2, ValueAt: 2, Name: "--tp", Value: "4"},
		{Kind: ArgFlag, At: 3, ValueAt: 4, Name: "--max-model-len", Value: "8192"},
		{Kind: ArgFlag, At: 5, ValueAt: -1, Name: "--enforce-eager"}, // boolean: "pos" is no value
		{Kind: ArgPositional, At: 6, ValueAt: -1, Value: "pos"},
		{Kind: ArgFlag, At: 7, ValueAt: 8, Name: "--seed", Value: "-1"}, // a negative number is a value
		{Kind: ArgFlag, At: 9, ValueAt: -1, Name: "-q"},                 // followed by a flag
		{Kind: ArgFlag, At: 10, ValueAt: -1, Name: "--port"},
		{Kind: ArgFlag, At: 11, ValueAt: -1, Name: "-pVALUE"},
		{Kind: ArgFlag, At: 12, ValueAt: 12, Name: "--x", Value: ""},
		{Kind: ArgEnd, At: 13, ValueAt: -1, Value: "--"},
		{Kind: ArgOperand, At: 14, ValueAt: -1, Value: "--z"},
		{Kind: ArgOperand, At: 15, ValueAt: -1, Value: "w"},
	}
	got := slices.Collect(Args(words, map[string]bool{"--enforce-eager": true}))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Args:\n got %+v\nwant %+v", got, want)
	}
	// A flag at the end has no value; one that stops the loop stops it.
	if got := slices.Collect(Args([]string{"--model"}, nil)); len(got) != 1 || got[0].ValueAt != -1 {
		t.Errorf("Args(--model) = %+v", got)
	}
	for a := range Args(words, nil) {
		if a.At > 0 {
			t.Fatalf("Args went on after its loop stopped: %+v", a)
		}
		break
	}
}

// ParseArgsWith finds the program where the redaction does: after
// wrappers and assignments, in a shell's script, or nowhere (args given to
// an image's entrypoint).
func TestParseArgsProgram(t *testing.T) {
	for _, tc := range []struct {
		name          string
		command, args []string
		progs         []string
	}{
		{"command", []string{"vllm", "serve"}, []string{"m"}, []string{"vllm"}},
		{"wrappers and assignments", []string{"env", "A=b", "exec", "nohup", "python3"}, []string{"-m", "x"}, []string{"python3"}},
		{"entrypoint's args", nil, []string{"serve", "m"}, []string{""}},
		{"args running a script", nil, []string{"sh", "-c", "a x; b y"}, []string{"a", "b"}},
		{"script after --", []string{"bash", "-ec", "--", "exec c --p 1"}, nil, []string{"c"}},
		{"a shell with no script", []string{"sh", "-e", "run.sh"}, nil, []string{"sh"}},
	} {
		var progs []string
		for _, inv := range ParseArgs(tc.command, tc.args) {
			progs = append(progs, inv.Program)
		}
		if !reflect.DeepEqual(progs, tc.progs) {
			t.Errorf("%s: programs %q, want %q", tc.name, progs, tc.progs)
		}
	}
}
