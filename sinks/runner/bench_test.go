package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
	"github.com/bomstream/bomstream/stream"
)

// nopSink stores nothing: what a benchmark through it measures is the
// runner's own cost per message.
type nopSink struct {
	name    string
	exports atomic.Int64
}

func (s *nopSink) Name() string { return s.name }
func (s *nopSink) Export(context.Context, sinks.BOM) error {
	s.exports.Add(1)
	return nil
}
func (s *nopSink) Tombstone(context.Context, sinks.Tombstone) error { return nil }
func (s *nopSink) Close() error                                     { return nil }

// BenchmarkLedger prints the cost of the sink ledger per message: N BOMs
// (BOMSTREAM_BENCH_N, default 20000) replayed into a sink that stores
// nothing, first with an empty ledger (every message checked, exported and
// recorded: a ledger put), then again (every message checked and skipped),
// and the time to load a ledger of N entries when a runner starts.
// BOMSTREAM_BENCH_DIR=/dev/shm takes the disk out.
//
//	go test -run '^$' -bench Ledger -benchtime 1x ./sinks/runner/
func BenchmarkLedger(b *testing.B) {
	n := 20000
	if v := os.Getenv("BOMSTREAM_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("BOMSTREAM_BENCH_N=%q: want a positive number", v)
		}
	}
	dir := b.TempDir()
	if d := os.Getenv("BOMSTREAM_BENCH_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "bench-ledger-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bus, err := stream.Open(ctx, stream.Config{DataDir: filepath.Join(dir, "data")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	for i := range n {
		publishBOM(b, bus, sinktest.NewBOM(sinktest.Workload("w"+strconv.Itoa(i)), uint64(i+1)))
	}
	sink := &nopSink{name: "nop"}
	pass := func(name string, wantExported, wantSkipped uint64) {
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			var wall time.Duration
			for range b.N {
				r, err := New(bus, sink, Config{}, false, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				start, c0 := time.Now(), cpuTime(b)
				st, err := r.Replay(ctx, ReplayOptions{}, nil)
				cpu, wall = cpu+cpuTime(b)-c0, wall+time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if st.Exported != wantExported || st.SkippedDuplicate != wantSkipped {
					b.Fatalf("replay: %+v, want %d exported and %d skipped", st, wantExported, wantSkipped)
				}
				wantExported = 0 // a second round finds the ledger full
				wantSkipped = uint64(n)
			}
			msgs := float64(n * b.N)
			b.ReportMetric(float64(cpu.Microseconds())/msgs, "cpu-us/msg")
			b.ReportMetric(msgs/wall.Seconds(), "msgs/s")
		})
	}
	pass("empty", uint64(n), 0)
	pass("full", 0, uint64(n))
	b.Run("load", func(b *testing.B) {
		var cpu time.Duration
		for range b.N {
			c0 := cpuTime(b)
			if _, err := New(bus, sink, Config{}, false, nil, nil); err != nil {
				b.Fatal(err)
			}
			cpu += cpuTime(b) - c0
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n*b.N), "cpu-us/entry")
	})
}

// cpuTime is the CPU time (user plus system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
