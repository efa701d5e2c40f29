package findings

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFindingEvaluate measures the CPU of evaluating one rendered BOM
// against the default rules: reading its facts and applying every rule
// (what the stage does per message besides the stream reads and writes).
func BenchmarkFindingEvaluate(b *testing.B) {
	paths, err := filepath.Glob("../../transformer/testdata/golden/manifests/*.cdx.json")
	if err != nil || len(paths) == 0 {
		b.Fatalf("golden BOMs: %v", err)
	}
	var boms [][]byte
	size := 0
	for _, p := range paths {
		bom, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		boms = append(boms, bom)
		size += len(bom)
	}
	r := defaults(b)
	b.ReportAllocs()
	b.SetBytes(int64(size / len(boms)))
	found := 0
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		f, err := ReadFacts(boms[i%len(boms)])
		if err != nil {
			b.Fatal(err)
		}
		found += len(r.Evaluate(f))
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/bom")
	b.ReportMetric(float64(found)/float64(b.N), "findings/bom")
}
