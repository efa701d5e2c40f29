package gcs

import (
	"context"
	"testing"

	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// BenchmarkExport measures exports against fake-gcs-server in-process:
// New is one new BOM per iteration (create the object, read and replace
// latest, delete a tombstone that is not there: four requests), Again the
// re-export of a stored BOM (a refused create, two metadata reads and the
// tombstone delete). The fake's
// lookups scan every object, so New empties the bucket every 100 exports
// (outside the timer) to keep measuring the sink.
func BenchmarkExport(b *testing.B) {
	srv := gcstest.Start(b, "boms")
	s := newSink(b, srv, "bench", nil)
	ctx := context.Background()
	b.Run("New", func(b *testing.B) {
		w := sinktest.Workload("bench-new")
		for i := 0; i < b.N; i++ {
			if i%100 == 99 {
				b.StopTimer()
				srv.Reset(b)
				b.StartTimer()
			}
			if err := s.Export(ctx, sinktest.NewBOM(w, uint64(i+1))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exports/s")
	})
	b.Run("Again", func(b *testing.B) {
		bom := sinktest.NewBOM(sinktest.Workload("bench-again"), 1)
		if err := s.Export(ctx, bom); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := s.Export(ctx, bom); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exports/s")
	})
}
