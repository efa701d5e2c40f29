package file

import (
	"context"
	"testing"

	"github.com/bomstream/bomstream/sinks/sinktest"
)

// BenchmarkExport measures one new BOM per iteration (its file, the latest
// link and a flush of the file system) and, in the Again variant, the
// idempotent re-export.
func BenchmarkExport(b *testing.B) {
	s, err := New(Config{Dir: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	w := sinktest.Workload("bench")
	b.Run("New", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.Export(ctx, sinktest.NewBOM(w, uint64(i+1))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Again", func(b *testing.B) {
		bom := sinktest.NewBOM(sinktest.Workload("again"), 1)
		if err := s.Export(ctx, bom); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := s.Export(ctx, bom); err != nil {
				b.Fatal(err)
			}
		}
	})
}
