// Package bustest gives tests of the stages a bus and a way to wait: Open
// opens an embedded store in a temporary directory (or the server cfg
// names) and closes it when the test ends; Eventually polls a condition with
// a deadline, so that no test waits on the clock. Package stream's own
// tests cannot import it (it imports stream) and keep their own.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream"
)

// Open opens a bus on cfg for a test, closed when the test ends. With
// neither a data directory nor a URL in cfg, it is an embedded store in a
// fresh temporary directory.
func Open(t testing.TB, cfg stream.Config) *stream.Bus {
	t.Helper()
	if cfg.DataDir == "" && cfg.URL == "" {
		cfg.DataDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := stream.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("open bus: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// Eventually polls cond until it holds, and fails t naming what when
// timeout passes first. It polls at once, then after 1 ms, doubling up to
// 100 ms between polls: quick conditions are seen quickly and slow ones
// are not asked too often.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
