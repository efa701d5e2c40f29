package findings

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

// BenchmarkFindingEvaluate measures the CPU of evaluating one rendered BOM
// against the default rules: reading its facts and applying every rule
// (what the stage does per message besides the stream reads and writes).
func BenchmarkFindingEvaluate(b *testing.B) {
	paths, err := filepath.Glob("../transformer/testdata/golden/manifests/*.cdx.json")
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

// BenchmarkFindingStage measures the CPU of the whole stage per BOM, in
// process with its embedded JetStream server (getrusage, all threads):
// BOMS of BOMSTREAM_BENCH_N (default 2000) fresh workloads, each a golden
// BOM, consumed, evaluated and their findings written. The BOMs are
// published before the clock starts.
func BenchmarkFindingStage(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("BOMSTREAM_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	paths, err := filepath.Glob("../transformer/testdata/golden/manifests/*.cdx.json")
	if err != nil || len(paths) == 0 {
		b.Fatalf("golden BOMs: %v", err)
	}
	var boms [][]byte
	for _, p := range paths {
		bom, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		boms = append(boms, bom)
	}
	b.StopTimer()
	for range b.N {
		bus := bustest.Open(b, stream.Config{DataDir: b.TempDir()})
		for i := range n {
			w := schemas.Workload{Cluster: "prod", Namespace: "ns", APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("w-%d", i), UID: fmt.Sprintf("u-%d", i)}
			publishBOM(b, bus, w, uint64(i+1), boms[i%len(boms)], "")
		}
		st, err := New(bus, defaults(b), Config{}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b.StartTimer()
		cpu0, start := cpuTime(b), time.Now()
		go func() { defer close(done); _ = st.Run(ctx) }()
		for st.Counts().Evaluated < uint64(n) { // polled: the stage has no completion signal
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("the stage evaluated %d of %d BOMs in 10 minutes", st.Counts().Evaluated, n)
			}
			time.Sleep(time.Millisecond)
		}
		used, wall := cpuTime(b)-cpu0, time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		c := st.Counts()
		b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/bom")
		b.ReportMetric(float64(n)/wall.Seconds(), "boms/s")
		b.ReportMetric(float64(c.Opened)/float64(n), "opened/bom")
		bus.Close()
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFindingFollow measures the CPU of the stage inline (Follow, as
// the transformer of the process calls it) per BOM, in process with its
// embedded JetStream server (getrusage, all threads): BOMSTREAM_BENCH_N
// (default 2000) fresh workloads, each a golden BOM with the facts the
// transformer gives, evaluated and their finding sets written by four
// goroutines (the transformer's concurrency). The facts are read before
// the clock starts.
func BenchmarkFindingFollow(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("BOMSTREAM_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	paths, err := filepath.Glob("../transformer/testdata/golden/manifests/*.cdx.json")
	if err != nil || len(paths) == 0 {
		b.Fatalf("golden BOMs: %v", err)
	}
	var facts []Facts
	for _, p := range paths {
		bom, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		f, err := ReadFacts(bom)
		if err != nil {
			b.Fatal(err)
		}
		facts = append(facts, f)
	}
	b.StopTimer()
	for range b.N {
		bus := bustest.Open(b, stream.Config{DataDir: b.TempDir()})
		st, err := New(bus, defaults(b), Config{}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = st.RunInline(ctx) }()
		msgs := make([]schemas.BOMMessage, n)
		for i := range msgs {
			w := schemas.Workload{Cluster: "prod", Namespace: "ns", APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("w-%d", i), UID: fmt.Sprintf("u-%d", i)}
			msgs[i] = schemas.BOMMessage{Workload: w, ChangeSeq: uint64(i + 1), EventTime: time.Unix(int64(1000+i), 0), BomHash: "h", BOM: []byte("{}"), Facts: &facts[i%len(facts)]}
		}
		for !st.tally.loaded.Load() { // RunInline has read FINDINGS
			time.Sleep(time.Millisecond)
		}
		const workers = 4
		errs := make(chan error, workers)
		b.StartTimer()
		cpu0, start := cpuTime(b), time.Now()
		for w := range workers {
			go func() {
				for i := w; i < n; i += workers {
					if err := st.Follow(ctx, &msgs[i]); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		used, wall := cpuTime(b)-cpu0, time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		c := st.Counts()
		b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/bom")
		b.ReportMetric(float64(n)/wall.Seconds(), "boms/s")
		b.ReportMetric(float64(c.Opened)/float64(n), "opened/bom")
		bus.Close()
	}
}
