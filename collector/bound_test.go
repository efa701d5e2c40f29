package collector

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

// bigArgs is a model flag followed by n flags of about 80 bytes, with an
// --api-key and its value at position secretAt (0: none).
func bigArgs(n, secretAt int, secret string) []any {
	args := []any{"--model", "Qwen/Qwen3-0.6B"}
	for i := range n {
		if secretAt > 0 && i == secretAt {
			args = append(args, "--api-key", secret)
		}
		args = append(args, fmt.Sprintf("--enable-feature-%06d-%s", i, strings.Repeat("x", 60)))
	}
	return args
}

func marks(fs []schemas.Field) []schemas.Field {
	var out []schemas.Field
	for _, f := range fs {
		if f.Name == schemas.FieldTruncated {
			out = append(out, f)
		}
	}
	return out
}

func inputHash(t *testing.T, in *schemas.Inputs) string {
	t.Helper()
	h, err := schemas.InputHash(in)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// 1.6 MB of args are cut to the first Items, with one mark on the component
// naming the list, the counts and the sha256 of the whole (redacted) list.
// The cut is deterministic; an edit past it changes the input hash, a
// rotated secret past it does not.
func TestBoundsCutHugeArgs(t *testing.T) {
	n := newNormalizer(t, Config{})
	norm := func(args []any) *schemas.Inputs {
		t.Helper()
		in, err := n.Normalize(deployment(map[string]any{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "args": args}), "cluster")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	args := bigArgs(20000, 15000, "sk-first-secret-0123456789")
	in := norm(args)
	ct := in.Components[0].Containers[0]
	if len(ct.Args) != DefaultItems || ct.Args[0] != "--model" || ct.Args[1] != "Qwen/Qwen3-0.6B" {
		t.Fatalf("args kept: %d, starting %q", len(ct.Args), ct.Args[:2])
	}
	ms := marks(in.Components[0].Fields)
	if len(ms) != 1 {
		t.Fatalf("marks = %+v, want one", ms)
	}
	// The whole list as the collector read it: redacted, uncut.
	lifted := newNormalizer(t, Config{Bounds: Bounds{Value: 1 << 20, Items: 1 << 20, Container: 64 << 20, Workload: 64 << 20}})
	full, err := lifted.Normalize(deployment(map[string]any{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "args": args}), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	fullArgs := full.Components[0].Containers[0].Args
	b, _ := schemas.CanonicalJSON(fullArgs)
	kept, _ := schemas.CanonicalJSON(ct.Args)
	sum := sha256.Sum256(b)
	want := fmt.Sprintf("kept 256 of 20004 items (%d of %d bytes), whole sha256:%s", len(kept), len(b), hex.EncodeToString(sum[:]))
	if ms[0].Locator != "spec.template.spec.containers[0].args" || ms[0].Value != want {
		t.Errorf("mark = %+v, want value %q", ms[0], want)
	}
	if strings.Contains(string(b), "sk-first-secret") {
		t.Error("the hashed whole holds the secret")
	}

	h := inputHash(t, in)
	if again := inputHash(t, norm(args)); again != h {
		t.Errorf("same input, input hash %s then %s", h, again)
	}
	edited := append([]any(nil), args...)
	edited[len(edited)-1] = "--enable-something-else"
	if inputHash(t, norm(edited)) == h {
		t.Error("an edit past the cut does not change the input hash")
	}
	if inputHash(t, norm(bigArgs(20000, 15000, "sk-rotated-secret-9876543210"))) != h {
		t.Error("a secret rotated past the cut changes the input hash")
	}
}

// A single huge string (a script, an env value, an image) is cut to Value
// bytes at a character boundary with a mark of its own or of its list, and
// redaction holds for what is kept.
func TestBoundsCutHugeStrings(t *testing.T) {
	n := newNormalizer(t, Config{})
	script := "vllm serve Qwen/Qwen3-0.6B --api-key sk-0123456789abcdef --port 8000 " + strings.Repeat("--opt-é ", 100000)
	in, err := n.Normalize(deployment(map[string]any{
		"name":    "vllm",
		"image":   "vllm/vllm-openai:" + strings.Repeat("v", 20000),
		"command": []any{"sh", "-c", script},
		"env": []any{
			map[string]any{"name": "MODEL_ID", "value": "org/" + strings.Repeat("m", 20000)},
			map[string]any{"name": "HF_TOKEN", "value": "hf_" + strings.Repeat("s", 20000)},
		},
	}), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	ct := in.Components[0].Containers[0]
	if len(ct.Command) != 3 || len(ct.Command[2]) > DefaultValueBytes || !strings.HasPrefix(ct.Command[2], "vllm serve Qwen/Qwen3-0.6B --api-key REDACTED") {
		t.Errorf("script kept: %d words, %.80q", len(ct.Command), ct.Command[len(ct.Command)-1])
	}
	if strings.Contains(ct.Command[2], "sk-0123") || strings.ContainsRune(ct.Command[2], '\uFFFD') {
		t.Error("the kept script holds the secret, or a broken character")
	}
	if len(ct.Image) != DefaultValueBytes || len(ct.Env[0].Value) != DefaultValueBytes || ct.Env[1].Value != "" || !ct.Env[1].Redacted {
		t.Errorf("image %d bytes, env %+v", len(ct.Image), ct.Env[1])
	}
	got := map[string]string{}
	for _, m := range marks(in.Components[0].Fields) {
		got[m.Locator] = m.Value
	}
	for _, loc := range []string{"spec.template.spec.containers[0].image", "spec.template.spec.containers[0].command", "spec.template.spec.containers[0].env"} {
		if !strings.Contains(got[loc], "whole sha256:") {
			t.Errorf("no mark for %s in %v", loc, got)
		}
	}
	if !strings.HasPrefix(got["spec.template.spec.containers[0].image"], fmt.Sprintf("kept %d of 20017 bytes,", DefaultValueBytes)) {
		t.Errorf("image mark %q", got["spec.template.spec.containers[0].image"])
	}
}

// However an object is built, its Inputs stay within the workload's bound
// (and so does its event, far under 1 MiB): many containers with lists of
// escape-heavy strings, many components, many fields.
func TestBoundsHoldForAnyShape(t *testing.T) {
	n := newNormalizer(t, Config{})
	nasty := strings.Repeat("\x01\"\\", 300) // each byte 2 to 6 in JSON
	var containers []any
	for i := range 300 {
		var env []any
		for j := range 100 {
			env = append(env, map[string]any{"name": fmt.Sprintf("MODEL_%d", j), "value": nasty})
		}
		containers = append(containers, map[string]any{
			"name": fmt.Sprintf("c%d-%s", i, nasty), "image": "vllm/vllm-openai:v1",
			"command": []any{"vllm", "serve", nasty}, "args": bigArgs(300, 0, ""), "env": env,
		})
	}
	services := map[string]any{}
	for i := range 500 {
		services[fmt.Sprintf("svc-%04d-%s", i, strings.Repeat("k", 300))] = map[string]any{
			"componentType": nasty,
			"extraPodSpec":  map[string]any{"mainContainer": map[string]any{"image": "nvcr.io/x:" + nasty, "args": bigArgs(100, 0, "")}},
			"extraPodMetadata": map[string]any{"labels": map[string]any{
				"llm-d.ai/role": nasty, "app.kubernetes.io/component": nasty,
			}},
		}
	}
	for name, obj := range map[string]map[string]any{
		"deployment": deployment(containers...),
		"graph": {
			"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
			"metadata": map[string]any{"name": "g", "namespace": "ml"},
			"spec":     map[string]any{"backendFramework": nasty, "services": services},
		},
	} {
		in, err := n.Normalize(obj, "file:"+strings.Repeat("d/", 100)+"x.yaml")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ev, err := schemas.NewObserved("bomstream/manifests", time.Unix(0, 0), in)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := schemas.CanonicalJSON(in)
		e, _ := schemas.CanonicalJSON(ev)
		t.Logf("%s: inputs %d bytes, event %d bytes, %d components", name, len(b), len(e), len(in.Components))
		if len(b) > DefaultWorkloadBytes+3*DefaultValueBytes+DefaultContainerBytes {
			t.Errorf("%s: inputs are %d bytes, over %d", name, len(b), DefaultWorkloadBytes)
		}
		if len(e) > 2*DefaultWorkloadBytes {
			t.Errorf("%s: event is %d bytes", name, len(e))
		}
		var all []schemas.Field
		all = append(all, marks(in.Fields)...)
		for _, c := range in.Components {
			all = append(all, marks(c.Fields)...)
		}
		if len(all) == 0 {
			t.Errorf("%s: cut without a mark", name)
		}
	}
}

// What no API server would take is refused, not cut: a workload's identity
// names it everywhere.
func TestBoundsIdentity(t *testing.T) {
	n := newNormalizer(t, Config{})
	obj := deployment(map[string]any{"name": "c", "image": "i:1"})
	obj["metadata"].(map[string]any)["name"] = strings.Repeat("n", 300)
	if _, err := n.Normalize(obj, "cluster"); err == nil || !strings.Contains(err.Error(), "metadata.name is 300 bytes, more than 253") {
		t.Errorf("long name: err = %v", err)
	}
	for _, b := range []Bounds{{Value: 1}, {Items: -1}, {Container: 10}, {Workload: 100}} {
		if _, err := NewNormalizer(Config{Bounds: b}); err == nil || !strings.Contains(err.Error(), "Bounds.") {
			t.Errorf("bounds %+v: err = %v", b, err)
		}
	}
}

func TestJSONLenBoundsTheEncoding(t *testing.T) {
	for _, s := range []string{"", "plain", "é\u2028\x00\x1f\"\\\n\t<>&", "\xff\xfe", strings.Repeat("\x01", 10)} {
		b, _ := schemas.CanonicalJSON(s)
		if jsonLen(s) < len(b) {
			t.Errorf("jsonLen(%q) = %d < %d", s, jsonLen(s), len(b))
		}
	}
	if p := prefix("aé", 2); p != "a" {
		t.Errorf("prefix = %q", p)
	}
	for _, s := range []string{"aé\x01b", strings.Repeat("\"", 10), "\xff\xffabc"} {
		for n := 2; n < 40; n++ {
			p := prefixJSON(s, n)
			if !strings.HasPrefix(s, p) || jsonLen(p) > n || len(p) < len(s) && jsonLen(prefixJSON(s, n+6)) <= jsonLen(p) && p != s {
				t.Errorf("prefixJSON(%q, %d) = %q", s, n, p)
			}
		}
	}
}

// fits (the check that lets bound return at once) never lets through what
// apply would change: on every testdata workload, apply keeps all, and on
// tighter bounds, whenever fits says yes, apply still keeps all.
func TestBoundsFitsAgreesWithApply(t *testing.T) {
	var all []*schemas.Inputs
	n := newNormalizer(t, Config{})
	for _, file := range []string{"core.yaml", "dynamo.yaml", "kserve.yaml", "lws.yaml", "operators.yaml"} {
		for _, o := range normalizeFile(t, n, file) {
			if o.in != nil {
				all = append(all, o.in)
			}
		}
	}
	if len(all) < 10 {
		t.Fatalf("%d workloads", len(all))
	}
	for _, b := range []Bounds{{}, {Value: 64, Items: 3, Container: 1024, Workload: 16 << 10}, {Items: 1}, {Value: 64}} {
		fitted := 0
		for _, in := range all {
			before, _ := schemas.CanonicalJSON(in)
			c := newCutter(b, in)
			if !c.fits(in) {
				continue
			}
			fitted++
			var copied schemas.Inputs
			if err := json.Unmarshal(before, &copied); err != nil {
				t.Fatal(err)
			}
			c.apply(&copied)
			after, _ := schemas.CanonicalJSON(&copied)
			if string(after) != string(before) {
				t.Errorf("bounds %+v: %s fits, yet apply changes it:\n%s\n%s", b, in.Workload.Key(), before, after)
			}
		}
		if b == (Bounds{}) && fitted != len(all) {
			t.Errorf("default bounds: %d of %d testdata workloads fit", fitted, len(all))
		}
	}
}
