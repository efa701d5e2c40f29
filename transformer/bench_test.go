package transformer

import (
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// BenchmarkRender renders the Dynamo vLLM disagg graph and the LWS vLLM
// example. Goal: >= 20,000 renders/s on one core (-cpu 1).
func BenchmarkRender(b *testing.B) {
	for _, bc := range []struct {
		name string
		in   *schemas.Inputs
	}{
		{"dynamo-vllm-disagg", dynamoDisagg()},
		{"lws-vllm", lwsVLLM()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := newRenderer(b)
			ev := event(b, bc.in)
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
