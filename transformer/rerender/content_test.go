package rerender

import (
	"os"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/transformer"
)

// With the real renderer, a new tool version changes the bytes (the
// serial number, metadata.tools) and not the content; other rules do.
func TestToolVersionIsNoContent(t *testing.T) {
	ev, err := schemas.NewObserved("test", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), &schemas.Inputs{
		Workload: workload("v"),
		Components: []schemas.Component{{Name: "main", Locator: "spec.template",
			Containers: []schemas.Container{{Name: "vllm", Locator: "spec.template.spec.containers[0]", Image: "vllm/vllm-openai:v0.10.1",
				Args: []string{"--model", "Qwen/Qwen2.5-7B-Instruct"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	render := func(cfg transformer.Config) []byte {
		t.Helper()
		r, err := transformer.NewRenderer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Render(ev)
		if err != nil || res.BOM == nil {
			t.Fatalf("render: %v, skipped %q", err, res.Skipped)
		}
		return res.BOM
	}
	v1, v2 := render(transformer.Config{Version: "1.0.0"}), render(transformer.Config{Version: "1.1.0"})
	if string(v1) == string(v2) {
		t.Fatal("the tool version is not in the BOM: the test shows nothing")
	}
	if what, err := difference(v1, v2); err != nil || what != "" {
		t.Fatalf("tool version only: %q, %v", what, err)
	}
	if what, err := difference(v1, nil); what != "no longer serving" || err != nil {
		t.Fatalf("to nothing: %q, %v", what, err)
	}
	if what, err := difference(nil, v2); what != "newly serving" || err != nil {
		t.Fatalf("from nothing: %q, %v", what, err)
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(cfg transformer.Config) string {
		r, err := transformer.NewRenderer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r.Fingerprint()
	}
	rules := t.TempDir() + "/rules.yaml"
	if err := writeRules(rules, "runtimes: [{name: sglang, images: [{pattern: '^x$'}]}]\n"); err != nil {
		t.Fatal(err)
	}
	a, b, c := fp(transformer.Config{Version: "1"}), fp(transformer.Config{Version: "2"}), fp(transformer.Config{Version: "1", RulesFile: rules})
	if a == b || a == c || b == c || a != fp(transformer.Config{Version: "1"}) {
		t.Fatalf("fingerprints %s %s %s", a, b, c)
	}
}

// Events the transformer has not handled yet are left to it.
func TestPendingEventsAreLeftToTheTransformer(t *testing.T) {
	f := newFixture(t)
	f.r.set("v2", map[string][]string{"a": {"vllm", "x"}, "b": {"vllm", "x"}, "c": {"x"}})
	rep, err := Rerender(t.Context(), f.bus, f.r, Options{Durable: "no-such-consumer"})
	if err != nil || rep.Pending != 3 || len(rep.Changes) != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
}

func writeRules(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
