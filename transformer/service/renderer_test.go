package service

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer"
)

// The real renderer satisfies the seam.
var _ Renderer = (*transformer.Renderer)(nil)

// TestRealRendererEndToEnd runs the stage with the real transformer: a vLLM
// Deployment event on CHANGES becomes the exact bytes Render gives on BOMS.
func TestRealRendererEndToEnd(t *testing.T) {
	r, err := transformer.NewRenderer(transformer.Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	b := openBus(t, stream.Config{})
	w := workload("vllm1")
	ev, err := schemas.NewObserved("test", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{{Name: "main", Locator: "spec.template",
			Containers: []schemas.Container{{
				Name: "vllm", Locator: "spec.template.spec.containers[0]", Image: "vllm/vllm-openai:v0.8.5",
				Args: []string{"--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"},
			}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Render(ev)
	if err != nil || want.BOM == nil {
		t.Fatalf("direct render: bom %d bytes, skipped %q, err %v", len(want.BOM), want.Skipped, err)
	}
	changeSeq := publish(t, b, ev)
	reg := prometheus.NewRegistry()
	run(t, newService(t, b, r, Config{}, reg))
	eventually(t, "the event is acked", func() bool { return settled(t, b, DefaultDurable) })

	got := messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))
	if len(got) != 1 {
		t.Fatalf("BOMS holds %d messages, want 1", len(got))
	}
	if string(got[0].Data) != string(want.BOM) {
		t.Fatal("published BOM differs from the renderer's bytes for the same event")
	}
	if h := got[0].Header.Get(schemas.HeaderBomHash); h != want.BomHash || h != schemas.BomHash(got[0].Data) {
		t.Fatalf("bom hash header %s, renderer %s", h, want.BomHash)
	}
	if got[0].Header.Get(schemas.HeaderChangeSeq) == "" || changeSeq == 0 {
		t.Fatal("no change sequence")
	}
	var doc struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
	}
	if err := json.Unmarshal(got[0].Data, &doc); err != nil || doc.BOMFormat != "CycloneDX" || doc.SpecVersion != "1.6" {
		t.Fatalf("not a CycloneDX 1.6 document: %+v %v", doc, err)
	}
	if n := counter(t, reg, "bomstream_transformer_rendered_total"); n != 1 {
		t.Errorf("rendered_total = %v", n)
	}
}
