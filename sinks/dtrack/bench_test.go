package dtrack_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// BenchmarkExport measures exports per second against the double on this
// machine: upload, wait for the import, confirm. The double (schema
// validation included) runs on the same cores, so the figure bounds the
// sink from below. Eight exports run at once, as the runner's workers do.
//
//	go test -run '^$' -bench Export -benchtime 2000x ./sinks/dtrack/
func BenchmarkExport(b *testing.B) {
	for _, c := range []struct {
		name     string
		opts     dtracktest.Options
		versions bool
	}{
		{"new-project", dtracktest.Options{}, false},
		{"new-version", dtracktest.Options{}, true},
		{"new-version/no-schema-validation", dtracktest.Options{DisableValidation: true}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			dt := newDouble(b, c.opts)
			s := newSink(b, dt, allPerms, nil)
			// Connect and create the parents outside the measure.
			if err := s.Export(ctx, aiBOM(b, workload("ml", "warmup"), 1, runtimePart("vllm", "0.8.4"))); err != nil {
				b.Fatal(err)
			}
			var seq atomic.Uint64
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0))) // 8 goroutines
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					name := fmt.Sprintf("model-%d", i)
					if c.versions {
						name = fmt.Sprintf("model-%d", i%64)
					}
					bom := aiBOM(b, workload("ml", name), 10+i, runtimePart("vllm", "0.8.4"),
						model(fmt.Sprintf("org/m-%d", i), "r1"), image("docker.io/vllm/vllm-openai", "v0.8.4"))
					if err := s.Export(ctx, bom); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "exports/s")
		})
	}
}
