package cmdline

import (
	"reflect"
	"strings"
	"testing"
)

func flagsOf(inv Invocation) map[string]string {
	m := map[string]string{}
	for _, f := range inv.Flags {
		m[f.Name] = f.Value
	}
	return m
}

func texts(ws []Word) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}

func TestParseArgs(t *testing.T) {
	t.Run("flag forms", func(t *testing.T) {
		invs := ParseArgsWith([]string{"vllm", "serve"}, []string{"Qwen/Qwen3-32B", "--tp=4", "--max-model-len", "8192", "--enforce-eager", "--trust-remote-code", "positional", "-q", "awq", "--seed", "-1"},
			ParseOptions{Booleans: map[string]bool{"--trust-remote-code": true}})
		if len(invs) != 1 || invs[0].Program != "vllm" {
			t.Fatalf("got %+v", invs)
		}
		f := flagsOf(invs[0])
		want := map[string]string{"--tp": "4", "--max-model-len": "8192", "--enforce-eager": "", "--trust-remote-code": "", "-q": "awq", "--seed": "-1"}
		if !reflect.DeepEqual(f, want) {
			t.Errorf("flags %v, want %v", f, want)
		}
		if got := texts(invs[0].Positionals); !reflect.DeepEqual(got, []string{"serve", "Qwen/Qwen3-32B", "positional"}) {
			t.Errorf("positionals %v", got)
		}
		if invs[0].Flags[0].Src != 3 {
			t.Errorf("--tp src %d, want 3 (command then args)", invs[0].Flags[0].Src)
		}
	})
	t.Run("shell script", func(t *testing.T) {
		script := "set -x\napt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \\\n  curl # comment; not a command\n" +
			"python -m vllm.entrypoints.openai.api_server \\\n  --model ${MODEL_ID} --served-model-name \"$NAME\" --port $(PORT) 2>&1 | tee /log; echo 'a;b' > /dev/null"
		invs := ParseArgsWith([]string{"/bin/bash", "-exc", script}, nil, ParseOptions{Env: map[string]string{"MODEL_ID": "/var/mdl/x", "PORT": "8000"}})
		var progs []string
		for _, inv := range invs {
			progs = append(progs, inv.Program)
			if !inv.Shell || inv.ProgramSrc != 2 {
				t.Errorf("%s: shell %v src %d", inv.Program, inv.Shell, inv.ProgramSrc)
			}
		}
		if want := []string{"set", "apt-get", "apt-get", "python", "tee", "echo"}; !reflect.DeepEqual(progs, want) {
			t.Fatalf("programs %v, want %v", progs, want)
		}
		f := flagsOf(invs[3])
		if f["--model"] != "/var/mdl/x" || f["--served-model-name"] != "$NAME" || f["--port"] != "8000" || f["-m"] != "vllm.entrypoints.openai.api_server" {
			t.Errorf("flags %v", f)
		}
		if got := texts(invs[5].Words); !reflect.DeepEqual(got, []string{"a;b"}) {
			t.Errorf("echo words %v (redirect target must be dropped, quotes kept whole)", got)
		}
	})
	t.Run("sh -c in args and kube vars", func(t *testing.T) {
		invs := ParseArgsWith([]string{"sh"}, []string{"-c", "exec llama-server --model $(M) --x $$(KEEP)"}, ParseOptions{Env: map[string]string{"M": "/m.gguf"}})
		if len(invs) != 1 || invs[0].Program != "llama-server" {
			t.Fatalf("got %+v", invs)
		}
		if f := flagsOf(invs[0]); f["--model"] != "/m.gguf" || f["--x"] != "$(KEEP)" {
			t.Errorf("flags %v", f)
		}
	})
	t.Run("args only", func(t *testing.T) {
		invs := ParseArgs(nil, []string{"serve", "Qwen/Qwen3-235B-A22B", "--port", "8000"})
		if len(invs) != 1 || invs[0].Program != "" || texts(invs[0].Positionals)[1] != "Qwen/Qwen3-235B-A22B" {
			t.Fatalf("got %+v", invs)
		}
	})
	t.Run("empty and odd", func(t *testing.T) {
		if invs := ParseArgs(nil, nil); invs != nil {
			t.Errorf("nil input gave %+v", invs)
		}
		for _, s := range []string{"'unterminated", "\"unterminated $", "${", "$(", "`", "\\", "a >", "&&&", "${A:-def}"} {
			ParseArgs([]string{"sh", "-c", s}, nil)
		}
		invs := ParseArgs([]string{"sh", "-c", "echo ${A:-def}"}, nil)
		if len(invs) != 1 || texts(invs[0].Words)[0] != "def" {
			t.Errorf("default expansion: %+v", invs)
		}
	})
}

func TestParseArgsLarge(t *testing.T) {
	// 1 MiB of arguments, as a list and as one shell script: linear work.
	args := make([]string, 0, 1<<16)
	for range 1 << 16 {
		args = append(args, "--flag-"+strings.Repeat("x", 8), "v")
	}
	invs := ParseArgs([]string{"vllm", "serve"}, args)
	if len(invs) != 1 || len(invs[0].Flags) != 1<<16 {
		t.Fatalf("got %d invocations", len(invs))
	}
	script := strings.Repeat("a $(b ${c '\"d; ", 1<<16)
	ParseArgs([]string{"bash", "-c", script}, nil)
}

// `bash -lc -- SCRIPT`: "--" ends the shell's options, the script is the
// word after it (KubeRay and AIBrix samples start vLLM so). It was read as
// the script "--", and the model of the vllm serve in the script was lost.
func TestParseArgsShellDoubleDash(t *testing.T) {
	invs := ParseArgs([]string{"/bin/bash", "-lc", "--"}, []string{"ray start --head; vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --tensor-parallel-size 2"})
	if len(invs) != 2 || invs[1].Program != "vllm" || len(invs[1].Positionals) < 2 || invs[1].Positionals[1].Text != "Qwen/Qwen2.5-Coder-7B-Instruct" {
		t.Fatalf("invocations %+v", invs)
	}
}

func FuzzParseArgs(f *testing.F) {
	seeds := []struct{ cmd, args string }{
		{"vllm\x00serve", "Qwen/Qwen3-32B\x00--tp=4\x00--enforce-eager"},
		{"", "serve\x00Qwen/Qwen3-235B-A22B"},
		{"sh\x00-c", "bash run.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 8"},
		{"/bin/bash\x00-exc", "set -x\npython -m vllm.entrypoints.openai.api_server \\\n --model ${MODEL_ID} 2>&1 | tee log"},
		{"python3\x00-m\x00dynamo.vllm", "--model\x00Qwen/Qwen3-0.6B\x00--is-decode-worker"},
		{"sh\x00-c", "echo 'unterminated"},
		{"sh\x00-c", "a $(b ${c \"d; `e"},
		{"", "--kv-transfer-config\x00{\"kv_role\":\"kv_producer\"}"},
	}
	for _, s := range seeds {
		f.Add(s.cmd, s.args)
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\x00")
	}
	f.Fuzz(func(t *testing.T, cmd, args string) {
		c, a := split(cmd), split(args)
		invs := ParseArgsWith(c, a, ParseOptions{Env: map[string]string{"MODEL_ID": "org/m", "X": "$(X)"}, Booleans: map[string]bool{"--enforce-eager": true}})
		n := len(c) + len(a)
		for _, inv := range invs {
			for _, w := range inv.Words {
				if w.Src < 0 || w.Src >= n {
					t.Fatalf("word %q has src %d of %d", w.Text, w.Src, n)
				}
			}
			for _, fl := range inv.Flags {
				if !strings.HasPrefix(fl.Name, "-") || fl.Src < 0 || fl.Src >= n {
					t.Fatalf("bad flag %+v", fl)
				}
			}
		}
	})
}
