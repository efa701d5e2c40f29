package schemas

import (
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"strings"
	"testing"
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

func TestInputHashStableAndSensitive(t *testing.T) {
	a, b := sampleInputs(), sampleInputs()
	ha, err := InputHash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := InputHash(b)
	if ha != hb {
		t.Fatalf("equal inputs gave %s and %s", ha, hb)
	}
	if !strings.HasPrefix(ha, "sha256:") || len(ha) != 71 {
		t.Fatalf("hash %q is not sha256:<64 hex>", ha)
	}
	b.Components[0].Containers[0].Image = "vllm/vllm-openai:v0.9.0"
	if hc, _ := InputHash(b); hc == ha {
		t.Fatal("an image change left the input hash unchanged")
	}
	if _, err := InputHash(nil); err == nil {
		t.Fatal("nil inputs hashed without error")
	}
}

func TestCanonicalJSONSortsMapsAndKeepsHTML(t *testing.T) {
	got, err := CanonicalJSON(map[string]any{"z": "<a&b>", "a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1,"z":"<a&b>"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestParseKey(t *testing.T) {
	ns, k, n, err := ParseKey("ml/Deployment/a.b")
	if err != nil || ns != "ml" || k != "Deployment" || n != "a.b" {
		t.Fatalf("got %q %q %q %v", ns, k, n, err)
	}
	if _, _, _, err := ParseKey("Deployment/x"); err == nil {
		t.Fatal("two segments parsed")
	}
}

// The contract package depends on the standard library only: every stage
// imports it, and none should drag a dependency in through it.
func TestSchemasImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") || path == "os/exec" {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
