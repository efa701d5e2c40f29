package collector

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

func testRedactor(t testing.TB, argAllow ...string) *argRedactor {
	t.Helper()
	decl, err := schemas.DeclaredArguments()
	if err != nil {
		t.Fatal(err)
	}
	return newArgRedactor(decl, argAllow, envAllowList{names: map[string]bool{"MODEL_ID": true}})
}

func TestRedactArgv(t *testing.T) {
	r := testRedactor(t, "--my-flag")
	hf := "hf_" + strings.Repeat("aB3", 10)
	for _, tc := range []struct {
		name      string
		cmd, args []string
		want      []string // command followed by args
	}{
		{"separate value", []string{"vllm", "serve"}, []string{"org/m", "--api-key", "sk-1", "--port", "8000"},
			[]string{"vllm", "serve", "org/m", "--api-key", "REDACTED", "--port", "8000"}},
		{"equals value", []string{"vllm"}, []string{"--hf-token=" + hf, "--model=org/m", "--empty="},
			[]string{"vllm", "--hf-token=REDACTED", "--model=org/m", "--empty="}},
		{"any unknown flag", []string{"srv"}, []string{"--db", "s3cret", "--p4ss=x", "--my-flag", "kept", "--tokenizer", "org/tok"},
			[]string{"srv", "--db", "REDACTED", "--p4ss=REDACTED", "--my-flag", "kept", "--tokenizer", "REDACTED"}},
		{"short flag", []string{"mysql"}, []string{"-u", "root", "-psecret", "-h", "db"},
			[]string{"mysql", "-u", "REDACTED", "-pREDACTED", "-h", "REDACTED"}},
		{"short allowed", []string{"llama-server"}, []string{"-m", "/m.gguf", "-tp", "2", "-q", "awq"},
			[]string{"llama-server", "-m", "/m.gguf", "-tp", "2", "-q", "awq"}},
		{"boolean then positional", []string{"vllm", "serve"}, []string{"--enforce-eager", "org/m", "--trust-remote-code", "--tp", "4"},
			[]string{"vllm", "serve", "--enforce-eager", "org/m", "--trust-remote-code", "--tp", "4"}},
		{"header value", []string{"curl"}, []string{"-H", "X-Api-Key: abc", "-H", "Authorization: Basic dXNlcjpw", "https://u:p@h/x?token=1"},
			[]string{"curl", "-H", "X-Api-Key: REDACTED", "-H", "Authorization: REDACTED", "https://REDACTED@h/x"}},
		{"positional token", []string{"download"}, []string{hf, "--", "--not-a-flag", hf},
			[]string{"download", "REDACTED", "--", "--not-a-flag", "REDACTED"}},
		{"assignments and wrappers", []string{"env", "HF_TOKEN=abc", "MODEL_ID=org/m", "exec", "vllm"}, []string{"--api-key", "x"},
			[]string{"env", "HF_TOKEN=REDACTED", "MODEL_ID=org/m", "exec", "vllm", "--api-key", "REDACTED"}},
		{"args only", nil, []string{"--api-key", "k", "serve", "org/m"},
			[]string{"--api-key", "REDACTED", "serve", "org/m"}},
		{"script to a shell entrypoint", nil, []string{"vllm serve org/m --db-pass x1 --tp 2"},
			[]string{"vllm serve org/m --db-pass REDACTED --tp 2"}},
		{"negative number", []string{"x"}, []string{"--seed", "-1", "--tp", "-1"},
			[]string{"x", "--seed", "REDACTED", "--tp", "-1"}},
		{"flag at the end", []string{"serve"}, []string{"--token"}, []string{"serve", "--token"}},
		{"data programs", []string{"htpasswd"}, []string{"-b", "-c", "/etc/htpasswd", "admin", "pw1"},
			[]string{"htpasswd", "-b", "-c", "REDACTED", "REDACTED", "REDACTED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a := r.command(tc.cmd, tc.args)
			if len(c) != len(tc.cmd) || len(a) != len(tc.args) {
				t.Fatalf("lengths changed: %q %q", c, a)
			}
			if got := append(append([]string(nil), c...), a...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRedactScript(t *testing.T) {
	r := testRedactor(t)
	for _, tc := range []struct {
		name, in string
		want     []string // substrings of the result
		never    []string
	}{
		{"flags", `python3 -m vllm.entrypoints.openai.api_server --model org/m --api-key "s k 1" --port 8000`,
			[]string{"-m vllm.entrypoints.openai.api_server", "--model org/m", "--api-key REDACTED", "--port 8000"}, []string{"s k 1"}},
		{"quoting cannot hide a value", `serve '--api-key' x1 "--password=x2" --tok"en" x3 --passphrase=$'x4'`,
			[]string{"'--api-key' REDACTED", "--password=REDACTED"}, []string{"x1", "x2", "x3", "x4"}},
		{"assignments", `HF_TOKEN=x1 MODEL_ID=org/m run; export API_KEY=x2 MODEL_ID=org/n; declare -x PW="x3"`,
			[]string{"MODEL_ID=org/m", "HF_TOKEN=REDACTED", "API_KEY=REDACTED", "MODEL_ID=org/n"}, []string{"x1", "x2", "x3"}},
		{"chains and substitutions", `set -e && curl -u admin:x1 https://h/f?sig=x2 | sh; T=$(cat /s) && login --secret "$T" || echo ok`,
			[]string{"set -e", "-u REDACTED", "https://h/f", "--secret REDACTED", "echo REDACTED"}, []string{"x1", "x2"}},
		{"heredoc and comments", "cat <<EOF > /c.json\n{\"token\": \"x1\"}\nEOF\n# password x2\nrun --model org/m",
			[]string{"REDACTED", "run --model org/m"}, []string{"x1", "x2"}},
		{"echo into a login", `echo "x1" | docker login -u bot --password-stdin ghcr.io && printf '%s' x2 > /pw`,
			[]string{"echo REDACTED", "docker login", "printf REDACTED REDACTED"}, []string{"x1", "x2"}},
		{"nested shell", `bash -c "sh -c 'serve --api-key x1 --model org/m'"`,
			[]string{"--model org/m"}, []string{"x1"}},
		{"does not parse", `serve --api-key x1 'unterminated`, []string{"REDACTED"}, []string{"x1", "serve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.script(tc.in, true, 0)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, w := range tc.never {
				if strings.Contains(got, w) {
					t.Errorf("%q keeps %q", got, w)
				}
			}
			if again := r.script(got, true, 0); again != got {
				t.Errorf("not stable: %q -> %q", got, again)
			}
		})
	}
	// In a container: the script of sh -c, in command or in args.
	c, a := r.command([]string{"/bin/sh", "-c"}, []string{"vllm serve org/m --api-key x1"})
	if c[0] != "/bin/sh" || c[1] != "-c" || a[0] != "vllm serve org/m --api-key REDACTED" {
		t.Errorf("sh -c in args: %q %q", c, a)
	}
	// "--" ends the shell's options: the script is the word after it
	// (`bash -lc -- "script"` in KubeRay and AIBrix samples).
	c, a = r.command([]string{"/bin/bash", "-lc", "--"}, []string{"ray start --head; vllm serve org/m --api-key x1"})
	if c[2] != "--" || !strings.Contains(a[0], "vllm serve org/m --api-key REDACTED") || strings.Contains(a[0], "x1") {
		t.Errorf("bash -lc -- script: %q %q", c, a)
	}
}

// TestRedactionReadsAsDetection: redaction and detection read a command
// line with one reader (cmdline), so every value the transformer reads of
// a flag a rule reads is kept where it reads it, and the value of every
// other flag is redacted.
func TestRedactionReadsAsDetection(t *testing.T) {
	r := testRedactor(t)
	decl, err := schemas.DeclaredArguments()
	if err != nil {
		t.Fatal(err)
	}
	booleans := map[string]bool{}
	for _, f := range decl.BooleanFlags {
		booleans[f] = true
	}
	for _, tc := range []struct{ cmd, args []string }{
		{[]string{"vllm", "serve"}, []string{"org/m", "--enforce-eager", "org/x", "--api-key", "k1", "--seed", "-1", "--tp=2", "--token=k2"}},
		{[]string{"env", "A=b", "exec", "python3", "-m", "vllm.entrypoints.openai.api_server"}, []string{"--model", "org/m", "--secret", "k3", "-q", "--", "--api-key", "k4"}},
		{nil, []string{"--model", "org/m", "--trust-remote-code", "--hf-token", "k5"}},
	} {
		c, a := r.command(tc.cmd, tc.args)
		red := append(append([]string(nil), c...), a...)
		invs := cmdline.ParseArgsWith(tc.cmd, tc.args, cmdline.ParseOptions{Booleans: booleans})
		if len(invs) != 1 {
			t.Fatalf("%q %q: %d invocations", tc.cmd, tc.args, len(invs))
		}
		for _, f := range invs[0].Flags {
			if !f.HasValue || f.ValueSrc == f.Src {
				continue
			}
			got := red[f.ValueSrc]
			if r.values[f.Name] && got != schemas.RedactText(f.Value) || !r.values[f.Name] && got != Redacted {
				t.Errorf("%q %q: the value of %s (%q) became %q", tc.cmd, tc.args, f.Name, f.Value, got)
			}
		}
		for _, p := range invs[0].Positionals {
			if red[p.Src] != schemas.RedactText(p.Text) {
				t.Errorf("%q %q: the positional %q became %q", tc.cmd, tc.args, p.Text, red[p.Src])
			}
		}
	}
}

func TestRedactArgsEnv(t *testing.T) {
	n := newNormalizer(t, Config{})
	in, err := n.Normalize(deployment(map[string]any{
		"name": "vllm", "image": "vllm/vllm-openai:v0.9.0",
		"env": []any{
			map[string]any{"name": "VLLM_ADDITIONAL_ARGS", "value": `--kv-transfer-config '{"kv_role":"kv_both"}' --api-key x1 --max-model-len 4096`},
		},
	}), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	got := in.Components[0].Containers[0].Env[0]
	if got.Redacted || strings.Contains(got.Value, "x1") || !strings.Contains(got.Value, "kv_both") || !strings.Contains(got.Value, "--max-model-len 4096") {
		t.Errorf("VLLM_ADDITIONAL_ARGS = %+v", got)
	}
}

// TestRedactEverywhere: the same redaction for init, sidecar and ephemeral
// containers, the containers an operator synthesizes from a CR's args, kind
// fields, allow-listed labels and the flags Config.ArgAllow adds.
func TestRedactEverywhere(t *testing.T) {
	n := newNormalizer(t, Config{ArgAllow: []string{"--tenant"}})
	objs, err := manifest.Parse("t.yaml", []byte(`apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {llm-d.ai/model: "hf_abcdefghijklmnopqrstuvwx01"}
spec:
  containers:
  - {name: main, image: "vllm/vllm-openai:v0.9.0", args: ["--tenant", "acme", "--token", "x1"]}
  initContainers:
  - {name: init, image: busybox, command: ["sh", "-c", "login --password x2"]}
  - {name: side, image: envoy, restartPolicy: Always, args: ["--secret=x3"]}
  ephemeralContainers:
  - {name: dbg, image: busybox, command: ["curl", "-H", "X-Api-Key: x4"]}
---
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: nim}
spec:
  image: {repository: nvcr.io/nim/meta/llama-3.1-8b-instruct, tag: "1.8.4"}
  args: ["--ngc-key", "x5"]
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      storageUri: "https://u:x6@host/m?sig=x7"
`))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, o := range objs {
		in, err := n.Normalize(o.Obj, "cluster")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(in)
		all.Write(b)
	}
	got := all.String()
	for _, s := range []string{"x1", "x2", "x3", "x4", "x5", "x6", "x7", "hf_abcdefghij"} {
		if strings.Contains(got, `"`+s) || strings.Contains(got, " "+s) || strings.Contains(got, ":"+s) || strings.Contains(got, "="+s) {
			t.Errorf("%s kept in %s", s, got)
		}
	}
	for _, want := range []string{`"--tenant","acme"`, `"--token","REDACTED"`, `login --password REDACTED`, `"--secret=REDACTED"`,
		`"X-Api-Key: REDACTED"`, `"--ngc-key","REDACTED"`, `"value":"https://REDACTED@host/m"`, `"llm-d.ai/model":"REDACTED"`, `spec.ephemeralContainers[0]`} {
		if !strings.Contains(got, want) {
			t.Errorf("inputs lack %s: %s", want, got)
		}
	}
	if err := (Config{ArgAllow: []string{"tenant"}}).Validate(); err == nil {
		t.Error("ArgAllow without a dash validated")
	}
}

// FuzzRedactCommand: redaction never panics, keeps the shape of command and
// args, and a token planted anywhere (inside quotes, scripts, here-documents,
// substitutions, values of kept flags) never survives it.
func FuzzRedactCommand(f *testing.F) {
	for _, s := range []string{
		"vllm\x00serve\x00org/m\x00--api-key\x00x",
		"sh\x00-c\x00serve --token 'a b' && curl -H \"X-Api-Key: k\" https://u:p@h/?q=1",
		"bash\x00-exc\x00cat <<EOF\nsecret\nEOF",
		"-pVALUE\x00--x=y\x00--\x00--z",
		"sh\x00-c\x00echo 'unterminated",
		"sh\x00-c\x00f() { x=${a:-b}; echo $((c+1)); }; case $y in z) w;; esac",
	} {
		f.Add(s, true, uint(len(s)/2))
	}
	r := testRedactor(f)
	const token = "hf_PLANTEDtokenPLANTEDtoken0123"
	f.Fuzz(func(t *testing.T, s string, program bool, at uint) {
		at %= uint(len(s) + 1)
		s = s[:at] + token + s[at:]
		words := strings.Split(s, "\x00")
		var cmd, args []string
		if program {
			cmd, args = words[:1], words[1:]
		} else {
			args = words
		}
		c, a := r.command(cmd, args)
		if len(c) != len(cmd) || len(a) != len(args) {
			t.Fatalf("shape changed: %q %q -> %q %q", cmd, args, c, a)
		}
		c2, a2 := r.command(cmd, args)
		if !reflect.DeepEqual(c, c2) || !reflect.DeepEqual(a, a2) {
			t.Fatalf("not deterministic: %q %q", cmd, args)
		}
		if out := strings.Join(append(c, a...), "\x00"); strings.Contains(out, "PLANTEDtoken") {
			t.Fatalf("the token survived: %q %q -> %q", cmd, args, out)
		}
	})
}
