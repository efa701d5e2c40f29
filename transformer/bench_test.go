package transformer

import (
	"path/filepath"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
)

// BenchmarkRender renders the Dynamo vLLM disagg graph (3 components) and the
// LWS vLLM example, read from the upstream fixtures when the corpus is there
// and otherwise from hand-built equivalents. Goal: >= 20,000 renders/s on one
// core:
//
//	go test -run '^$' -bench BenchmarkRender -benchmem -cpu 1 -count 5 ./transformer/
func BenchmarkRender(b *testing.B) {
	for _, bc := range []struct {
		name, fixture string
		fallback      func() *schemas.Inputs
	}{
		{"dynamo-vllm-disagg", "dynamo/examples/backends/vllm/deploy/disagg.yaml", dynamoDisagg},
		{"lws-vllm", "lws/docs/examples/vllm/GPU/lws.yaml", lwsVLLM},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := newRenderer(b)
			ev := event(b, fixtureInputs(b, bc.fixture, bc.fallback))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := r.Render(ev)
				if err != nil || res.BOM == nil {
					b.Fatalf("render: %v %q", err, res.Skipped)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "renders/s")
		})
	}
}

// fixtureInputs normalizes the first workload of an upstream fixture, or
// returns fallback() when the corpus is not on this machine.
func fixtureInputs(b *testing.B, rel string, fallback func() *schemas.Inputs) *schemas.Inputs {
	root, ok := manifesttest.Find()
	if !ok {
		b.Logf("upstream corpus not found: rendering a hand-built equivalent of %s", rel)
		return fallback()
	}
	objs, err := manifest.ReadPath(filepath.Join(root, rel))
	if err != nil {
		b.Fatal(err)
	}
	n, err := collector.NewNormalizer(collector.Config{Cluster: "dev"})
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		if in, err := n.Normalize(o.Obj, "file:"+rel); err == nil {
			return in
		}
	}
	b.Fatalf("%s: no workload", rel)
	return nil
}

// BenchmarkEncode writes the BOM of the Dynamo disagg graph with appendBOM
// and with cyclonedx-go's encoder, the oracle it reproduces:
//
//	go test -run '^$' -bench BenchmarkEncode -benchmem -cpu 1 ./transformer/
func BenchmarkEncode(b *testing.B) {
	r := newRenderer(b)
	bom := buildBOM(b, r, event(b, fixtureInputs(b, "dynamo/examples/backends/vllm/deploy/disagg.yaml", dynamoDisagg)), false)
	b.Run("appendBOM", func(b *testing.B) {
		b.ReportAllocs()
		var out []byte
		for i := 0; i < b.N; i++ {
			out, _ = appendBOM(out[:0], bom)
		}
		b.SetBytes(int64(len(out)))
	})
	b.Run("cyclonedx-go", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := encodeCDX(bom); err != nil {
				b.Fatal(err)
			}
		}
	})
}
