package file

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

func TestFsyncOptionDecodes(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]any
		want bool
	}{
		{map[string]any{}, true},
		{map[string]any{"fsync": true}, true},
		{map[string]any{"fsync": false}, false},
	} {
		c.raw["dir"] = t.TempDir()
		s, err := fromConfig(c.raw)
		if err != nil {
			t.Fatalf("%v: %v", c.raw, err)
		}
		if got := s.(*Sink).fsync; got != c.want {
			t.Errorf("%v: fsync %v, want %v", c.raw, got, c.want)
		}
	}
	if _, err := fromConfig(map[string]any{"fsync": "never"}); err == nil || !strings.Contains(err.Error(), "never") {
		t.Errorf("fsync: \"never\": error %v, want one naming the value", err)
	}
}

// fromConfig builds a sink as the registry does from a config block.
func fromConfig(raw map[string]any) (sinks.Sink, error) {
	reg := sinks.Registry{Type: SinkType}
	cfg, err := reg.Decode(Type, raw)
	if err != nil {
		return nil, err
	}
	return reg.New(context.Background(), Type, "f", cfg, sinks.Deps{})
}

func newNoFsyncSink(t *testing.T) *Sink {
	t.Helper()
	off := false
	s, err := New(Config{Dir: t.TempDir(), Fsync: &off}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Without fsync the sink keeps the whole contract; only crash durability differs.
func TestConformanceWithoutFsync(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinks.Sink { return newNoFsyncSink(t) }, sinktest.Options{
		Inspect: inspect, Outage: outage, Type: SinkType, Config: map[string]any{"fsync": false},
		NoChecker: "the file sink has no checks: its tree is made by the first write",
	})
}

// truncate cuts the immutable file of b in s's tree to half its size, as a
// machine crash can leave an unsynced write, and returns its path.
func truncate(t *testing.T, s *Sink, b sinks.BOM) string {
	t.Helper()
	dir, err := s.WorkloadDir(b.Workload)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.TrimPrefix(b.BomHash, "sha256:")+Suffix)
	if err := os.Truncate(path, int64(len(b.Body)/2)); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTruncatedFileIsRewritten(t *testing.T) {
	for name, s := range map[string]*Sink{"durable": newSink(t), "nofsync": newNoFsyncSink(t)} {
		ctx := context.Background()
		b := sinktest.NewBOM(sinktest.Workload("crashed"), 1)
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
		path := truncate(t, s, b)
		if err := s.Export(ctx, b); err != nil {
			t.Fatalf("%s: re-export over a truncated file: %v", name, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(b.Body) {
			t.Fatalf("%s: file holds %d bytes after the re-export, want the %d bytes of the BOM", name, len(got), len(b.Body))
		}
	}
}

func TestFlushIntervalDecodes(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]any
		want time.Duration
	}{
		{map[string]any{}, DefaultFlushInterval},
		{map[string]any{"flushInterval": "5ms"}, 5 * time.Millisecond},
		{map[string]any{"flushInterval": "0s"}, 0},
		{map[string]any{"flushInterval": "50ms", "fsync": false}, 0}, // nothing to wait for
	} {
		c.raw["dir"] = t.TempDir()
		s, err := fromConfig(c.raw)
		if err != nil {
			t.Fatalf("%v: %v", c.raw, err)
		}
		if got := s.(*Sink).commit.interval; got != c.want {
			t.Errorf("%v: interval %s, want %s", c.raw, got, c.want)
		}
	}
	for v, want := range map[string]string{"-1ms": "flushInterval: -1ms is outside 0s to 1s", "2s": "flushInterval: 2s is outside", "soon": "soon"} {
		if _, err := fromConfig(map[string]any{"dir": t.TempDir(), "flushInterval": v}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("flushInterval: %q: error %v, want one with %q", v, err, want)
		}
	}
}

// Without load a flush starts at once, however long the interval: lone
// exports, one after the other, do not wait for it.
func TestLoneFlushesDoNotWait(t *testing.T) {
	flushed := 0
	c := &committer{interval: time.Hour, flush: func() error { flushed++; return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		if err := c.wait(ctx); err != nil || flushed != i {
			t.Fatalf("wait %d: %v after %d flushes, want a flush at once", i, err, flushed)
		}
	}
}

// Under load (the last flush served more than one caller) a flush starts
// no sooner than the interval after a slow one before, and every caller
// that arrived in between shares it.
func TestFlushIntervalSpacesFlushes(t *testing.T) {
	const interval = 100 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Time
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	c := &committer{interval: interval, flush: func() error {
		mu.Lock()
		starts = append(starts, time.Now())
		i := len(starts) - 1
		mu.Unlock()
		if i < len(gates) {
			<-gates[i] // callers arrive while the flush runs
		}
		if i == 1 {
			time.Sleep(interval) // a slow flush: the next waits the whole interval
		}
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	flushes := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(starts)
	}
	until := func(what string, cond func() bool) {
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			}
			time.Sleep(time.Millisecond)
		}
	}
	errs := make(chan error, 100)
	call := func(n int) {
		for range n {
			go func() { errs <- c.wait(ctx) }()
		}
		until("all callers to wait for the next flush", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.waiting) == n
		})
	}
	// Flush 1 serves one caller; flush 2, the ten that arrived during it,
	// starts as soon as flush 1 ends; flush 3, the ten that arrived during
	// flush 2, waits for the interval.
	go func() { errs <- c.wait(ctx) }()
	until("flush 1", func() bool { return flushes() > 0 })
	call(10)
	close(gates[0])
	until("flush 2", func() bool { return flushes() >= 2 })
	call(10)
	close(gates[1])
	for range 21 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 3 {
		t.Fatalf("%d flushes for batches of 1, 10 and 10 callers, want 3", len(starts))
	}
	if gap := starts[2].Sub(starts[1]); gap < interval {
		t.Errorf("flush 3 started %s after flush 2 (10 callers), want at least %s", gap, interval)
	}
}

// Under load, a flush waits for twice the last one's duration at most: cheap
// flushes (tmpfs) are not held back by a long interval.
func TestCheapFlushesAreNotHeldBack(t *testing.T) {
	flushed := 0
	c := &committer{interval: time.Hour, flush: func() error { flushed++; return nil }}
	c.lastBatch, c.lastTook, c.lastStart = 10, time.Microsecond, time.Now() // a cheap flush for ten callers just ran
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.wait(ctx); err != nil || flushed != 1 {
		t.Fatalf("wait: %v after %d flushes, want a flush without the hour's wait", err, flushed)
	}
}
