package transformer

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		ref                      string
		registry, repo, tag, dig string
		purl                     string
	}{
		{"nginx", "docker.io", "library/nginx", "", "", "pkg:oci/nginx?repository_url=docker.io/library/nginx"},
		{"nginx:1.15", "docker.io", "library/nginx", "1.15", "", "pkg:oci/nginx?repository_url=docker.io/library/nginx&tag=1.15"},
		{"docker.io/redis:6.0.5", "docker.io", "library/redis", "6.0.5", "", ""},
		{"vllm/vllm-openai:v0.8.5", "docker.io", "vllm/vllm-openai", "v0.8.5", "", "pkg:oci/vllm-openai?repository_url=docker.io/vllm/vllm-openai&tag=v0.8.5"},
		{"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1", "nvcr.io", "nvidia/ai-dynamo/vllm-runtime", "1.3.1", "", ""},
		{"localhost:5000/a/b:t", "localhost:5000", "a/b", "t", "", "pkg:oci/b?repository_url=localhost:5000/a/b&tag=t"},
		{"ghcr.io/x/y@sha256:" + strings.Repeat("ab", 32), "ghcr.io", "x/y", "", "sha256:" + strings.Repeat("ab", 32),
			"pkg:oci/y@sha256%3A" + strings.Repeat("ab", 32) + "?repository_url=ghcr.io/x/y"},
		{"llamacpp-worker:latest", "docker.io", "library/llamacpp-worker", "latest", "", ""},
		// As docker reads it: a first component with upper case is a registry host.
		{"UPPER/case", "UPPER", "case", "", "", ""},
		{"index.docker.io/vllm/vllm-openai:v0.9.0", "docker.io", "vllm/vllm-openai", "v0.9.0", "", ""},
		{"[::1]:5000/m/vllm:1", "[::1]:5000", "m/vllm", "1", "", ""},
	} {
		img, err := ParseImage(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if img.Registry != tc.registry || img.Repository != tc.repo || img.Tag != tc.tag || img.Digest != tc.dig {
			t.Errorf("%s: got %+v", tc.ref, img)
		}
		if tc.purl != "" && img.PURL("") != tc.purl {
			t.Errorf("%s: purl %s, want %s", tc.ref, img.PURL(""), tc.purl)
		}
	}
	for _, bad := range []string{"", "  ", "${VERSION}", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:${VERSION}", "<image>", "REPLACE_MODEL_SERVER_IMAGE",
		"a b", "x@sha256:zz", "Upper", "repo:", ":tag", "a//b", "-lead", "x:" + strings.Repeat("t", 200),
		// Found by FuzzParseImage: its first segment has a dot, so it names a
		// registry, but no valid one; the reference library left it empty.
		"0.0_0/0", "a.b_c/d:1", "x_y.z/w"} {
		if img, err := ParseImage(bad); err == nil || !errors.Is(err, ErrUnresolvedImage) {
			t.Errorf("%q parsed as %+v (err %v)", bad, img, err)
		}
	}
}

func TestVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v0.8.5": "0.8.5", "0.8.0": "0.8.0", "1.12": "1.12", "23.10-py3": "23.10", "24.07-trtllm-python-py3": "24.07",
		"v0.19.1": "0.19.1", "0.8.5rc1": "0.8.5rc1", "latest": "", "main": "", "my-tag": "", "${VERSION}": "",
		"2025-05-05-v1": "", "2024.05.01": "", "3": "", "": "", "1..2": "", "1.": "", "replace": "",
	} {
		if got := Version(in); got != want {
			t.Errorf("Version(%q) = %q, want %q", in, got, want)
		}
	}
}

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
	for i := 0; i < 1<<16; i++ {
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
