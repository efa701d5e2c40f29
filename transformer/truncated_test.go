package transformer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

// normalize reads obj as the collector does, bounds included.
func normalize(t testing.TB, obj map[string]any) *schemas.Inputs {
	t.Helper()
	n, err := collector.NewNormalizer(collector.Config{Cluster: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := n.Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func deploymentOf(containers ...any) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "big", "namespace": "ml"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}},
	}
}

// What the collector cut is shown where it was cut: a mark in a container
// on that container's component, any other on the workload. Detection
// works on what was kept.
func TestRenderShowsTruncation(t *testing.T) {
	args := []any{"--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"}
	for i := range 20000 {
		args = append(args, fmt.Sprintf("--enable-feature-%06d", i))
	}
	in := normalize(t, deploymentOf(
		map[string]any{"name": "server", "image": "vllm/vllm-openai:v0.10.1", "args": args},
		map[string]any{"name": "sidecar", "image": "busybox:1.36", "command": []any{"sh", "-c", "python3 -m http.server " + strings.Repeat("x", 20000)}},
	))
	in.Fields = append(in.Fields, schemas.Field{Name: schemas.FieldTruncated, Value: "kept 1 of 9 fields (10 of 90 bytes), whole sha256:00"})
	_, doc := render(t, in)
	if _, ok := doc.model("Qwen/Qwen3-0.6B"); !ok {
		t.Error("the model before the cut is not found")
	}
	rt := mustRuntime(t, doc, "vllm", "0.10.1", "inferred")
	if rt.prop("runtime:tensorParallelSize") != "2" {
		t.Errorf("settings before the cut: %+v", rt.Properties)
	}
	marks := map[string][]string{}
	for _, c := range doc.byType("container") {
		marks[c.Name] = c.props("truncated")
	}
	if got := marks["docker.io/vllm/vllm-openai"]; len(got) != 1 || !strings.HasPrefix(got[0], "spec.template.spec.containers[0].args: kept 256 of 20004 items (") {
		t.Errorf("vllm container marks: %q", got)
	}
	if got := marks["docker.io/library/busybox"]; len(got) != 1 || !strings.HasPrefix(got[0], "spec.template.spec.containers[1].command: kept 3 of 3 items") {
		t.Errorf("busybox container marks: %q", got)
	}
	if got := doc.Metadata.Component.props("truncated"); len(got) != 1 || got[0] != "kept 1 of 9 fields (10 of 90 bytes), whole sha256:00" {
		t.Errorf("workload marks: %q", got)
	}
}

// Bounded inputs make bounded BOMs: however the inputs spend their budget
// (thousands of distinct models in flags or in scripts), the BOM stays under
// MaxBOMBytes, lists the models found first, and says how many it left out.
func TestBOMStaysUnderItsLimit(t *testing.T) {
	shapes := map[string][]any{}
	for i := range 300 {
		var flags, short []any
		for j := range 200 {
			flags = append(flags, "--model", fmt.Sprintf("org%03d/model-%03d-%s", i, j, strings.Repeat("q", 40)))
			short = append(short, "--model", fmt.Sprintf("o/%d-%d", i, j))
		}
		var script strings.Builder
		for j := 0; script.Len() < 9000; j++ {
			fmt.Fprintf(&script, "vllm serve o%d/m%d; ", i, j)
		}
		image := fmt.Sprintf("vllm/vllm-openai:v0.%d.0", i)
		shapes["flags"] = append(shapes["flags"], map[string]any{"name": fmt.Sprintf("c%d", i), "image": image, "args": flags})
		shapes["short"] = append(shapes["short"], map[string]any{"name": fmt.Sprintf("c%d", i), "image": image, "args": short})
		shapes["scripts"] = append(shapes["scripts"], map[string]any{"name": fmt.Sprintf("c%d", i), "image": image, "command": []any{"sh", "-c", script.String()}})
	}
	for name, cs := range shapes {
		in := normalize(t, deploymentOf(cs...))
		res, doc := render(t, in)
		t.Logf("%s: BOM %d bytes, %d models", name, len(res.BOM), len(res.Summary.Models))
		if len(res.BOM) > DefaultMaxBOMBytes {
			t.Errorf("%s: BOM is %d bytes", name, len(res.BOM))
		}
		first := fmt.Sprintf("org000/model-000-%s", strings.Repeat("q", 40))
		if name != "flags" {
			first = map[string]string{"short": "o/0-0", "scripts": "o0/m0"}[name]
		}
		if _, ok := doc.model(first); !ok {
			t.Errorf("%s: the first model %s is not listed", name, first)
		}
		note := strings.Join(doc.Metadata.Component.props("truncated"), "\n")
		if !strings.Contains(note, fmt.Sprintf("models: %d of ", len(res.Summary.Models))) || !strings.Contains(note, "spec.template: kept ") {
			t.Errorf("%s: workload marks %q", name, note)
		}
		refs := map[string]bool{"workload": true}
		for _, c := range doc.Components {
			refs[c.BOMRef] = true
		}
		for _, dep := range doc.Dependencies {
			for _, ref := range dep.DependsOn {
				if !refs[ref] {
					t.Errorf("%s: %s depends on %s, which is not listed", name, dep.Ref, ref)
					break
				}
			}
		}
	}

	// The same event gives the same bytes.
	in := normalize(t, deploymentOf(shapes["short"]...))
	a, _ := newRenderer(t).Render(event(t, in))
	b, _ := newRenderer(t).Render(event(t, in))
	if a.BomHash != b.BomHash {
		t.Error("a shortened BOM is not deterministic")
	}
	// With a limit no BOM can meet, the error says so.
	r, err := NewRenderer(Config{MaxBOMBytes: minBOMBytes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Render(event(t, in)); !errors.Is(err, ErrBOMTooLarge) {
		t.Errorf("render under a limit too small: err = %v", err)
	}
	if _, err := NewRenderer(Config{MaxBOMBytes: 100}); err == nil {
		t.Error("MaxBOMBytes 100 accepted")
	}
}
