package validate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/bomstream/bomstream/schemas"
)

func sampleInputs() *Inputs {
	return &Inputs{
		Workload: Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "vllm", UID: "0f3c"},
		Components: []Component{{
			Name: "main", Locator: "spec.template", Roles: []string{"server"},
			Containers: []Container{{
				Name: "vllm", Locator: "spec.template.spec.containers[0]", Image: "vllm/vllm-openai:v0.8.5",
				Args: []string{"--model", "Qwen/Qwen3-0.6B"},
				Env:  []EnvVar{{Name: "HF_TOKEN", From: &KeyRef{Kind: "secret", Name: "hf", Key: "token"}}, {Name: "X", Redacted: true}},
			}},
			Labels: map[string]string{"b": "2", "a": "1"},
		}},
	}
}

func TestEventsValidate(t *testing.T) {
	v, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	ev, err := NewObserved("bomstream://dev/collector", at, sampleInputs())
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "dev:0f3c:"+ev.Data.InputHash || ev.Subject != "ml/Deployment/vllm" {
		t.Fatalf("id %q subject %q", ev.ID, ev.Subject)
	}
	raw, _ := json.Marshal(ev)
	if err := v.ValidateEvent(raw); err != nil {
		t.Fatalf("observed event does not validate: %v\n%s", err, raw)
	}
	tomb, _ := json.Marshal(NewDeleted("bomstream://dev/collector", at, ev.Data.Workload))
	if err := v.ValidateEvent(tomb); err != nil {
		t.Fatalf("tombstone does not validate: %v", err)
	}
	// A tombstone with inputs, an unknown type and a bad hash must all fail.
	bad := strings.Replace(string(raw), `"inputHash":"sha256:`, `"inputHash":"md5:`, 1)
	for name, doc := range map[string]string{
		"bad hash":     bad,
		"unknown type": strings.Replace(string(raw), TypeObserved, "dev.bomstream.other.v1", 1),
		"tombstone with inputs": strings.Replace(strings.Replace(string(raw), TypeObserved, TypeDeleted, 1),
			`"id":"`+ev.ID, `"id":"dev:0f3c:deleted`, 1),
	} {
		if err := v.ValidateEvent([]byte(doc)); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

func TestBOMSchema(t *testing.T) {
	dir, err := CycloneDXSchemaDir()
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,"components":[{"type":"machine-learning-model","name":"m"}]}`
	if err := v.ValidateBOM([]byte(ok)); err != nil {
		t.Fatalf("minimal bom: %v", err)
	}
	if err := v.ValidateBOM([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"type":"robot","name":"m"}]}`)); err == nil {
		t.Fatal("a component type outside the enum validated")
	}
}
