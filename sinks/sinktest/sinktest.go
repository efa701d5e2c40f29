// Package sinktest is the conformance suite of the sinks.Sink contract, plus
// small helpers to build BOMs and count what a sink was asked to do.
//
// Every sink calls Run from its tests with a constructor and an Inspect hook
// that reports what the sink has stored for one workload.
package sinktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
)

// Stored is what a sink holds for one workload, as seen by Inspect.
type Stored struct {
	// BOMs is the number of distinct BOMs stored (by BomHash).
	BOMs int
	// Latest is the BomHash the sink presents as the workload's latest, or "".
	Latest string
	// Tombstoned reports whether the sink says the workload is gone.
	Tombstoned bool
}

// Options tell Run how to look inside the sink under test.
type Options struct {
	// Inspect reports what s holds for the workload w. Required.
	Inspect func(t *testing.T, s sinks.Sink, w schemas.Workload) Stored
	// Invalid are BOMs this sink must reject with a sinks.Permanent error
	// (e.g. a name that would escape the sink's directory). Optional.
	Invalid []sinks.BOM
	// InvalidTombstones are tombstones it must reject the same way. Optional.
	InvalidTombstones []sinks.Tombstone
	// LatestOnly says the sink keeps only a workload's latest BOM (a
	// Dependency-Track project holds the components of its last upload):
	// Inspect then reports at most one BOM where a sink keeping history
	// reports each distinct one.
	LatestOnly bool
	// TombstoneRemoves says a tombstone removes what the sink holds for the
	// workload (Dependency-Track with onTombstone: delete): Inspect then
	// reports Stored{} after it, instead of the BOMs marked Tombstoned.
	TombstoneRemoves bool
	// PrepareBOM, when set, is applied to every BOM that Run builds before
	// the sink sees it, for sinks that need more than NewBOM gives (an OCI
	// sink needs Images that exist in a registry). It must keep Workload,
	// Body, BomHash and the sequences. Optional.
	PrepareBOM func(t *testing.T, b sinks.BOM) sinks.BOM
	// TombstonesNotStored says that the sink, by its documented design,
	// keeps no trace of tombstones (OCI referrers are history attached to
	// an image, not a workload's current state). Run still calls Tombstone,
	// twice, and wants nil, but expects Inspect never to report Tombstoned.
	TombstonesNotStored bool
}

// stored is what a sink with opts should hold for a workload that was sent
// boms distinct BOMs, the last one latest, and a tombstone after them when
// tombstoned.
func (o Options) stored(boms int, latest string, tombstoned bool) Stored {
	if tombstoned && o.TombstoneRemoves {
		return Stored{}
	}
	if o.LatestOnly && boms > 1 {
		boms = 1
	}
	return Stored{BOMs: boms, Latest: latest, Tombstoned: tombstoned}
}

// hangGuard bounds calls that must return promptly; it fails the test only
// when a call hangs, never on speed.
const hangGuard = time.Minute

// Run checks newSink's sinks against the contract: idempotent re-export, two
// versions, tombstones (idempotent, and revived by a newer export),
// cancellation without partial state, concurrent use, and error classification.
func Run(t *testing.T, newSink func(t *testing.T) sinks.Sink, opts Options) {
	t.Helper()
	if opts.Inspect == nil {
		t.Fatal("sinktest.Run: Options.Inspect is required")
	}
	open := func(t *testing.T) sinks.Sink {
		s := newSink(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		if err := sinks.ValidateName(s.Name()); err != nil {
			t.Fatalf("Name: %v", err)
		}
		return s
	}
	ctx := context.Background()
	newBOM := func(t *testing.T, w schemas.Workload, changeSeq uint64) sinks.BOM {
		t.Helper()
		b := NewBOM(w, changeSeq)
		if opts.PrepareBOM != nil {
			b = opts.PrepareBOM(t, b)
		}
		return b
	}
	check := func(t *testing.T, s sinks.Sink, w schemas.Workload, want Stored) {
		t.Helper()
		if opts.TombstonesNotStored {
			want.Tombstoned = false
		}
		if got := opts.Inspect(t, s, w); got != want {
			t.Fatalf("stored for %s: got %+v, want %+v", w, got, want)
		}
	}

	t.Run("ReExportIsIdempotent", func(t *testing.T) {
		s := open(t)
		w := Workload("reexport")
		b := newBOM(t, w, 10)
		for i := 0; i < 2; i++ {
			if err := s.Export(ctx, b); err != nil {
				t.Fatalf("export #%d: %v", i+1, err)
			}
		}
		check(t, s, w, Stored{BOMs: 1, Latest: b.BomHash})
	})

	t.Run("TwoVersionsLatestIsSecond", func(t *testing.T) {
		s := open(t)
		w := Workload("versions")
		b1, b2 := newBOM(t, w, 10), newBOM(t, w, 20)
		mustExport(t, s, b1)
		check(t, s, w, Stored{BOMs: 1, Latest: b1.BomHash})
		mustExport(t, s, b2)
		check(t, s, w, opts.stored(2, b2.BomHash, false))
	})

	t.Run("TombstoneAfterExport", func(t *testing.T) {
		s := open(t)
		w := Workload("gone")
		b := newBOM(t, w, 10)
		mustExport(t, s, b)
		mustTombstone(t, s, NewTombstone(w, 20))
		check(t, s, w, opts.stored(1, b.BomHash, true))
	})

	t.Run("TombstoneIsIdempotent", func(t *testing.T) {
		s := open(t)
		w := Workload("gone-twice")
		b := newBOM(t, w, 10)
		mustExport(t, s, b)
		ts := NewTombstone(w, 20)
		mustTombstone(t, s, ts)
		mustTombstone(t, s, ts)
		check(t, s, w, opts.stored(1, b.BomHash, true))
	})

	t.Run("NewerExportRevives", func(t *testing.T) {
		s := open(t)
		w := Workload("revived")
		b1, b2 := newBOM(t, w, 10), newBOM(t, w, 30)
		mustExport(t, s, b1)
		mustTombstone(t, s, NewTombstone(w, 20))
		mustExport(t, s, b2)
		want := opts.stored(2, b2.BomHash, false)
		if opts.TombstoneRemoves {
			want = Stored{BOMs: 1, Latest: b2.BomHash} // b1 went with the tombstone
		}
		check(t, s, w, want)
	})

	t.Run("CanceledContext", func(t *testing.T) {
		s := open(t)
		w := Workload("canceled")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := within(t, func() error { return s.Export(cctx, newBOM(t, w, 10)) })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("export with canceled context: got %v, want an error wrapping context.Canceled", err)
		}
		err = within(t, func() error { return s.Tombstone(cctx, NewTombstone(w, 20)) })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("tombstone with canceled context: got %v, want an error wrapping context.Canceled", err)
		}
		check(t, s, w, Stored{})
		// The sink still works afterwards.
		b := newBOM(t, w, 30)
		mustExport(t, s, b)
		check(t, s, w, Stored{BOMs: 1, Latest: b.BomHash})
	})

	t.Run("ConcurrentDifferentBOMs", func(t *testing.T) {
		s := open(t)
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		boms := make([]sinks.BOM, n)
		for i := range boms {
			boms[i] = newBOM(t, Workload(fmt.Sprintf("parallel-%d", i)), uint64(100+i))
		}
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs[i] = s.Export(ctx, boms[i])
			}(i)
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			if errs[i] != nil {
				t.Fatalf("export %d: %v", i, errs[i])
			}
			check(t, s, boms[i].Workload, Stored{BOMs: 1, Latest: boms[i].BomHash})
		}
	})

	t.Run("ErrorClassification", func(t *testing.T) {
		if err := sinks.Permanent(nil); err != nil {
			t.Fatalf("Permanent(nil) = %v", err)
		}
		base := errors.New("boom")
		if !sinks.IsPermanent(fmt.Errorf("wrapped: %w", sinks.Permanent(base))) {
			t.Fatal("a wrapped Permanent error is not IsPermanent")
		}
		if sinks.IsPermanent(base) {
			t.Fatal("a plain error is IsPermanent")
		}
		s := open(t)
		for _, b := range opts.Invalid {
			err := s.Export(ctx, b)
			if !sinks.IsPermanent(err) {
				t.Errorf("export of invalid %s: got %v, want a permanent error", b.Workload, err)
			}
		}
		for _, ts := range opts.InvalidTombstones {
			if err := s.Tombstone(ctx, ts); !sinks.IsPermanent(err) {
				t.Errorf("tombstone of invalid %s: got %v, want a permanent error", ts.Workload, err)
			}
		}
	})
}

func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("call did not return within %s", hangGuard)
		return nil
	}
}

func mustExport(t *testing.T, s sinks.Sink, b sinks.BOM) {
	t.Helper()
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatalf("export %s@%d: %v", b.Workload, b.ChangeSeq, err)
	}
}

func mustTombstone(t *testing.T, s sinks.Sink, ts sinks.Tombstone) {
	t.Helper()
	if err := s.Tombstone(context.Background(), ts); err != nil {
		t.Fatalf("tombstone %s@%d: %v", ts.Workload, ts.ChangeSeq, err)
	}
}
