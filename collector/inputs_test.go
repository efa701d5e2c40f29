package collector

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
)

func TestSecretsNeverInInputs(t *testing.T) {
	secrets := []string{
		"hf_abcdefghijklmnopqrstuvwxyz0123",
		"AKIAwJalrXUtnFEMIK7MDENGbPxRfiCYEX",
		"sk-123secret",
		"hf_ZYXWVUTSRQPONMLKJIHGFEDCBA9876",
		"abcSHELLtoken",
		"supersecretpw",
		"nvapi-9f8e7d",
		"hf_ALLOWLISTEDbutCREDENTIAL0000",
	}
	obj := deployment(map[string]any{
		"name":    "server",
		"image":   "engine:1",
		"command": []any{"sh", "-c", "serve --model org/m --token " + secrets[4] + " --port 8000"},
		"args":    []any{"--api-key", secrets[2], "--hf-token=" + secrets[3], "--db-password", secrets[5]},
		"env": []any{
			map[string]any{"name": "HF_TOKEN", "value": secrets[0]},
			map[string]any{"name": "AWS_SECRET_ACCESS_KEY", "value": secrets[1]},
			map[string]any{"name": "NGC", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "ngc", "key": "key"}}},
			map[string]any{"name": "NIM_MODEL_NAME", "value": secrets[6] + " token=x"},
			map[string]any{"name": "MODEL_ID", "value": secrets[7]},
			map[string]any{"name": "MODEL_NAME", "value": "org/kept"},
		},
		"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": "bundle"}}},
	})
	in, err := newNormalizer(t, Config{}).Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("secret %q leaked into %s", s, b)
		}
	}
	// what must stay: names, references, allow-listed values
	for _, want := range []string{`"name":"HF_TOKEN","redacted":true`, `"from":{"kind":"secret","name":"ngc","key":"key"}`,
		`{"kind":"secret","name":"bundle"}`, `"name":"MODEL_NAME","value":"org/kept"`, `"name":"MODEL_ID","redacted":true`, `"--api-key","REDACTED"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("inputs lack %s: %s", want, b)
		}
	}
}

func hash(t *testing.T, n *Normalizer, obj map[string]any) string {
	t.Helper()
	in, err := n.Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	h, err := schemas.InputHash(in)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// dgdObject builds a DynamoGraphDeployment; order says in which order the
// services and labels are inserted into their maps.
func dgdObject(order []string) map[string]any {
	services := map[string]any{}
	for _, name := range order {
		services[name] = map[string]any{
			"componentType": "worker",
			"extraPodSpec": map[string]any{"mainContainer": map[string]any{
				"image": "dyn/runtime:1",
				"args":  []any{"--model", "org/model-" + strings.ToLower(name)},
			}},
		}
	}
	labels := map[string]any{}
	for _, k := range []string{"llm-d.ai/role", "llm-d.ai/model", "app.kubernetes.io/component"} {
		labels[k] = "v"
	}
	return map[string]any{
		"apiVersion": "nvidia.com/v1beta1",
		"kind":       "DynamoGraphDeployment",
		"metadata":   map[string]any{"name": "g", "namespace": "ml", "uid": "u-1"},
		"spec": map[string]any{
			"services": services,
			"components": []any{map[string]any{
				"name":        "c",
				"type":        "worker",
				"podTemplate": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{"containers": []any{map[string]any{"image": "x:1"}}}},
			}},
		},
	}
}

func TestInputHashDeterministic(t *testing.T) {
	n := newNormalizer(t, Config{})
	a := hash(t, n, dgdObject([]string{"A", "B", "C", "D"}))
	if b := hash(t, n, dgdObject([]string{"A", "B", "C", "D"})); a != b {
		t.Errorf("same object, different hashes %s %s", a, b)
	}
	for range 20 {
		if b := hash(t, n, dgdObject([]string{"D", "C", "B", "A"})); a != b {
			t.Fatalf("insertion order changed the hash")
		}
	}
}

func TestInputHashIgnoresChurn(t *testing.T) {
	n := newNormalizer(t, Config{})
	base := func() map[string]any {
		objs, err := manifest.ReadPath("testdata/core.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return objs[0].Obj
	}
	want := hash(t, n, base())
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	md := func(o map[string]any) map[string]any { return o["metadata"].(map[string]any) }
	for name, edit := range map[string]func(map[string]any){
		"replicas":        func(o map[string]any) { spec(o)["replicas"] = int64(9) },
		"status":          func(o map[string]any) { o["status"] = map[string]any{"readyReplicas": int64(1)} },
		"annotations":     func(o map[string]any) { md(o)["annotations"] = map[string]any{"a": "b"} },
		"resourceVersion": func(o map[string]any) { md(o)["resourceVersion"] = "123" },
		"generation":      func(o map[string]any) { md(o)["generation"] = int64(7) },
		"managedFields":   func(o map[string]any) { md(o)["managedFields"] = []any{map[string]any{"manager": "kubectl"}} },
		"strategy":        func(o map[string]any) { spec(o)["strategy"] = map[string]any{"type": "Recreate"} },
		"pod annotations": func(o map[string]any) {
			spec(o)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"] = map[string]any{"restartedAt": "now"}
		},
		"unlisted label": func(o map[string]any) {
			spec(o)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["pod-template-hash"] = "abc"
		},
	} {
		o := base()
		edit(o)
		if got := hash(t, n, o); got != want {
			t.Errorf("%s edit changed the input hash", name)
		}
	}
	container := func(o map[string]any) map[string]any {
		return spec(o)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	}
	for name, edit := range map[string]func(map[string]any){
		"image tag": func(o map[string]any) { container(o)["image"] = "vllm/vllm-openai:v0.9.1" },
		"model arg": func(o map[string]any) { container(o)["args"].([]any)[0] = "org/model-z" },
		"role label": func(o map[string]any) {
			spec(o)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["llm-d.ai/role"] = "prefill"
		},
	} {
		o := base()
		edit(o)
		if got := hash(t, n, o); got == want {
			t.Errorf("%s edit did not change the input hash", name)
		}
	}
}

func TestNormalizeBadInput(t *testing.T) {
	n := newNormalizer(t, Config{})

	in, err := n.Normalize(deployment(map[string]any{"name": "c", "image": "i:1",
		"args": []any{"--tp", int64(2), true, 1.5},
		"env":  []any{map[string]any{"name": "MAX_MODEL_LEN", "value": int64(4096)}, map[string]any{"name": "NUM_SHARD", "value": true}}}), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	c := in.Components[0].Containers[0]
	if strings.Join(c.Args, " ") != "--tp 2 true 1.5" {
		t.Errorf("args = %q", c.Args)
	}
	if c.Env[0].Value != "4096" || c.Env[1].Value != "true" {
		t.Errorf("env = %+v", c.Env)
	}

	for name, ctr := range map[string]map[string]any{
		"spec.template.spec.containers[0].args":             {"name": "c", "args": map[string]any{"a": "b"}},
		"spec.template.spec.containers[0].args[1]":          {"name": "c", "args": []any{"ok", []any{"x"}}},
		"spec.template.spec.containers[0].command":          {"name": "c", "command": "python"},
		"spec.template.spec.containers[0].env[0].value":     {"name": "c", "env": []any{map[string]any{"name": "X", "value": map[string]any{"k": "v"}}}},
		"spec.template.spec.containers[0].image":            {"name": "c", "image": []any{"a"}},
		"spec.template.spec.containers[0].envFrom[0]":       {"name": "c", "envFrom": []any{"x"}},
		"spec.template.spec.containers[0].env[0].valueFrom": {"name": "c", "env": []any{map[string]any{"name": "X", "valueFrom": "s"}}},
	} {
		_, err := n.Normalize(deployment(ctr), "cluster")
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "ml/Deployment/web: "+name+":") || errors.Is(err, ErrNotWorkload) || errors.Is(err, ErrUnknownKind) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// a container list that is not a list, a template that is not a map
	obj := deployment()
	obj["spec"].(map[string]any)["template"] = "oops"
	if _, err := n.Normalize(obj, "cluster"); err == nil || !strings.Contains(err.Error(), "ml/Deployment/web: spec.template: expected a mapping") {
		t.Errorf("template string: err = %v", err)
	}
	obj = deployment()
	obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = map[string]any{}
	if _, err := n.Normalize(obj, "cluster"); err == nil || !strings.Contains(err.Error(), "spec.template.spec.containers: expected a list") {
		t.Errorf("containers map: err = %v", err)
	}
	// no kind at all
	if _, err := n.Normalize(map[string]any{"metadata": map[string]any{"name": "x"}}, "cluster"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("no kind: err = %v", err)
	}
}

// Redaction reads a huge argv whole (the bounds, lifted here, cut it after:
// see bound_test.go).
func TestNormalizeHugeArgs(t *testing.T) {
	n := newNormalizer(t, Config{Bounds: Bounds{Value: 1 << 20, Items: 1 << 20, Container: 64 << 20, Workload: 64 << 20}})
	const size = 1 << 20
	args := make([]any, 0, size/16)
	total := 0
	for i := 0; total < size; i++ {
		a := "--flag-value-" + strings.Repeat("x", 3)
		if i%1000 == 0 {
			a = "--api-key"
		}
		args = append(args, a)
		total += len(a)
	}
	in, err := n.Normalize(deployment(map[string]any{"name": "c", "image": "i:1", "args": args,
		"command": []any{"sh", "-c", strings.Repeat("echo run --model org/m; ", size/24)}}), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	got := in.Components[0].Containers[0].Args
	if len(got) != len(args) || got[1] != "--flag-value-xxx" {
		t.Fatalf("args: %d, want %d", len(got), len(args))
	}
	// "--api-key" at 1000 is followed by a flag, so nothing is redacted
	if got[1001] != "--flag-value-xxx" {
		t.Errorf("args[1001] = %q", got[1001])
	}
}

func TestProfilesFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `profiles:
- group: example.com
  kind: ModelServer
  versions: [v1]
  workload: true
  fields:
  - {name: modelUri, path: spec.modelRef}
  components:
  - path: spec.pods.*
    nameFrom: [key]
    roleFields: [role]
    containers:
    - list: template.spec.containers
- group: ""
  kind: Service
  workload: false
  note: "services are boring"
`)
	n := newNormalizer(t, Config{ProfilesFile: good})
	in, err := n.Normalize(map[string]any{
		"apiVersion": "example.com/v1", "kind": "ModelServer",
		"metadata": map[string]any{"name": "ms"},
		"spec": map[string]any{
			"modelRef": "hf://org/x",
			"pods": map[string]any{
				"zeta":  map[string]any{"role": "decode", "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "e", "image": "e:1"}}}}},
				"alpha": map[string]any{"role": "prefill"},
			},
		},
	}, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	wantShape(t, "ms", in, `
alpha [prefill] @spec.pods.alpha
zeta [decode] @spec.pods.zeta
  e "e:1" @spec.pods.zeta.template.spec.containers[0]
`)
	if f := fields(in.Fields); f != "modelUri=hf://org/x@spec.modelRef" {
		t.Errorf("fields = %s", f)
	}
	_, err = n.Normalize(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"}}, "cluster")
	if !errors.Is(err, ErrNotWorkload) || !strings.Contains(err.Error(), "services are boring") {
		t.Errorf("override: err = %v", err)
	}
	// built-ins not overridden are still there
	if _, err := n.Normalize(deployment(), "cluster"); err != nil {
		t.Errorf("deployment with user profiles: %v", err)
	}

	for name, tc := range map[string]struct{ content, want string }{
		"unknown field": {"profiles:\n- group: a\n  kind: B\n  workload: true\n  components:\n  - pth: spec\n", "line 6: profiles[0].components[0].pth: unknown key (known here: containers, "},
		"bad path":      {"profiles:\n- group: a\n  kind: B\n  workload: true\n  components:\n  - path: spec..x\n    name: n\n", "profiles[0] (a B): components[0].path"},
		"two sources":   {"profiles:\n- group: a\n  kind: B\n  workload: true\n  components:\n  - path: spec\n    name: n\n    containers:\n    - list: a\n      single: b\n", "components[0].containers[0].list: set exactly one"},
		"no name":       {"profiles:\n- group: a\n  kind: B\n  workload: true\n  components:\n  - path: spec\n", "components[0].name"},
		"bad value":     {"profiles:\n- group: a\n  kind: B\n  workload: true\n  fields:\n  - {name: x, path: a, value: other}\n  components:\n  - {path: spec, name: n}\n", "fields[0].value"},
		"not yaml":      {"profiles: [\n", "line"},
	} {
		p := write(strings.ReplaceAll(name, " ", "-")+".yaml", tc.content)
		_, err := NewNormalizer(Config{ProfilesFile: p})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %s and %q", name, err, p, tc.want)
		}
	}
	if _, err := NewNormalizer(Config{ProfilesFile: filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("missing profiles file accepted")
	}
}

func BenchmarkNormalizeHugeArgs(b *testing.B) {
	n := newNormalizer(b, Config{})
	args := make([]any, 0, 1<<16)
	for range 1 << 16 {
		args = append(args, "--flag-value-xxx")
	}
	obj := deployment(map[string]any{"name": "c", "image": "i:1", "args": args})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := n.Normalize(obj, "cluster"); err != nil {
			b.Fatal(err)
		}
	}
}
