// Package sinktest is the conformance suite of the sinks.Sink contract, plus
// small helpers to build BOMs and count what a sink was asked to do.
//
// Every sink calls Run from its tests with a constructor and Options: an
// Inspect hook that reports what the sink has stored for one workload, an
// Outage hook that takes its store down and brings it back, and its
// registry entry with a valid configuration block. Run calls the sink the
// way the runner does (package sinks/runner): a BOM that passes
// sinks.BOM.Check, one workload at a time, older versions marked Superseded
// or Stale. Each case is a subtest:
//
//	ReExportIsIdempotent       the same BOM twice is stored once
//	TwoVersionsLatestIsSecond  a newer BOM becomes the latest
//	OlderVersionKeepsLatest    a superseded BOM changes nothing presented as latest
//	TombstoneAfterExport       a tombstone retires the latest BOM
//	TombstoneIsIdempotent      the same tombstone twice is applied once
//	StaleTombstoneIsIgnored    a stale tombstone retires nothing
//	NewerExportRevives         a BOM after a tombstone is current again
//	CanceledContext            a canceled call returns ctx.Err and stores nothing
//	ConcurrentDifferentBOMs    exports of different workloads at once
//	StoreOutage                transient errors while the store is down, no partial state, success after
//	ErrorClassification        Options.Invalid and InvalidTombstones are permanent errors
//	StrictConfig               an unknown configuration key is rejected by name
//	Checker                    a sinks.Checker passes on a working store and fails on a broken one
//
// A case that does not apply to a sink is skipped because an Options field
// says so, with the reason (NoOutage, NoChecker, TombstonesNotStored).
package sinktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
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
	// Inspect reports what s holds for the workload w. Required. Run calls
	// it only while the store is up.
	Inspect func(t *testing.T, s sinks.Sink, w schemas.Workload) Stored
	// Outage takes the store of s down (down true: every call to it fails
	// as an unreachable or broken store does) or brings it back. Required
	// unless NoOutage says why the sink has no store to lose.
	Outage func(t *testing.T, s sinks.Sink, down bool)
	// NoOutage is why StoreOutage and Checker do not apply; it skips them.
	NoOutage string
	// NoChecker is why the sink does not implement sinks.Checker; required
	// when it does not, it skips Checker.
	NoChecker string
	// Type is the sink's registry entry, and Config a configuration block
	// it accepts (nil for none), for StrictConfig. Type is required.
	Type   sinks.Type
	Config map[string]any
	// Invalid are BOMs this sink must reject with a sinks.Permanent error
	// (e.g. a name that would escape the sink's directory); they pass
	// sinks.BOM.Check, which the runner does. Optional.
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
	// an image, not a workload's current state). Run still calls Tombstone
	// and wants nil, but expects Inspect never to report Tombstoned, and
	// skips what only a tombstone would show.
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

// Run checks newSink's sinks against the contract, one subtest per case
// (see the package documentation).
func Run(t *testing.T, newSink func(t *testing.T) sinks.Sink, opts Options) {
	t.Helper()
	if opts.Inspect == nil {
		t.Fatal("sinktest.Run: Options.Inspect is required")
	}
	if opts.Outage == nil && opts.NoOutage == "" {
		t.Fatal("sinktest.Run: Options.Outage is required, or NoOutage saying why the sink has no store to lose")
	}
	if opts.Type.NewConfig == nil {
		t.Fatal("sinktest.Run: Options.Type is required")
	}
	c := suite{newSink: newSink, opts: opts}
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ReExportIsIdempotent", c.reExportIsIdempotent},
		{"TwoVersionsLatestIsSecond", c.twoVersionsLatestIsSecond},
		{"OlderVersionKeepsLatest", c.olderVersionKeepsLatest},
		{"TombstoneAfterExport", c.tombstoneAfterExport},
		{"TombstoneIsIdempotent", c.tombstoneIsIdempotent},
		{"StaleTombstoneIsIgnored", c.staleTombstoneIsIgnored},
		{"NewerExportRevives", c.newerExportRevives},
		{"CanceledContext", c.canceledContext},
		{"ConcurrentDifferentBOMs", c.concurrentDifferentBOMs},
		{"StoreOutage", c.storeOutage},
		{"ErrorClassification", c.errorClassification},
		{"StrictConfig", c.strictConfig},
		{"Checker", c.checker},
	} {
		t.Run(tc.name, tc.run)
	}
}

// suite is one Run: the sink's constructor and options.
type suite struct {
	newSink func(t *testing.T) sinks.Sink
	opts    Options
}

var ctx = context.Background()

// open makes a sink for one case, closed when the case ends.
func (c suite) open(t *testing.T) sinks.Sink {
	t.Helper()
	s := c.newSink(t)
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

// newBOM is NewBOM, prepared by Options.PrepareBOM.
func (c suite) newBOM(t *testing.T, w schemas.Workload, changeSeq uint64) sinks.BOM {
	t.Helper()
	b := NewBOM(w, changeSeq)
	if c.opts.PrepareBOM != nil {
		b = c.opts.PrepareBOM(t, b)
	}
	return b
}

// check fails t unless Inspect reports want for w.
func (c suite) check(t *testing.T, s sinks.Sink, w schemas.Workload, want Stored) {
	t.Helper()
	if c.opts.TombstonesNotStored {
		want.Tombstoned = false
	}
	if got := c.opts.Inspect(t, s, w); got != want {
		t.Fatalf("stored for %s: got %+v, want %+v", w, got, want)
	}
}

func (c suite) reExportIsIdempotent(t *testing.T) {
	s := c.open(t)
	w := Workload("reexport")
	b := c.newBOM(t, w, 10)
	for i := range 2 {
		if err := s.Export(ctx, b); err != nil {
			t.Fatalf("export #%d: %v", i+1, err)
		}
	}
	c.check(t, s, w, Stored{BOMs: 1, Latest: b.BomHash})
}

func (c suite) twoVersionsLatestIsSecond(t *testing.T) {
	s := c.open(t)
	w := Workload("versions")
	b1, b2 := c.newBOM(t, w, 10), c.newBOM(t, w, 20)
	mustExport(t, s, b1)
	c.check(t, s, w, Stored{BOMs: 1, Latest: b1.BomHash})
	mustExport(t, s, b2)
	c.check(t, s, w, c.opts.stored(2, b2.BomHash, false))
}

// olderVersionKeepsLatest: a BOM older than one exported before comes
// marked Superseded (a replay that ignores the ledger, a late message of a
// deleted workload); it may be kept as history, but the latest stays, and
// after a tombstone it revives nothing.
func (c suite) olderVersionKeepsLatest(t *testing.T) {
	s := c.open(t)
	w := Workload("out-of-order")
	b10, b20, b30 := c.newBOM(t, w, 10), c.newBOM(t, w, 20), c.newBOM(t, w, 30)
	mustExport(t, s, b10)
	mustExport(t, s, b30)
	b20.Superseded = true
	mustExport(t, s, b20)
	c.check(t, s, w, c.opts.stored(3, b30.BomHash, false))
	if c.opts.TombstonesNotStored {
		return // without tombstones, a BOM after b30's time is the latest there is
	}
	mustTombstone(t, s, NewTombstone(w, 40))
	b35 := c.newBOM(t, w, 35)
	b35.Superseded = true
	mustExport(t, s, b35)
	c.check(t, s, w, c.opts.stored(4, b30.BomHash, true))
}

func (c suite) tombstoneAfterExport(t *testing.T) {
	s := c.open(t)
	w := Workload("gone")
	b := c.newBOM(t, w, 10)
	mustExport(t, s, b)
	mustTombstone(t, s, NewTombstone(w, 20))
	c.check(t, s, w, c.opts.stored(1, b.BomHash, true))
}

func (c suite) tombstoneIsIdempotent(t *testing.T) {
	s := c.open(t)
	w := Workload("gone-twice")
	b := c.newBOM(t, w, 10)
	mustExport(t, s, b)
	ts := NewTombstone(w, 20)
	mustTombstone(t, s, ts)
	mustTombstone(t, s, ts)
	c.check(t, s, w, c.opts.stored(1, b.BomHash, true))
}

// staleTombstoneIsIgnored: a tombstone older than a BOM exported before
// (a workload deleted and re-created under its name, whose tombstone
// arrives late) comes marked Stale and retires nothing.
func (c suite) staleTombstoneIsIgnored(t *testing.T) {
	s := c.open(t)
	w := Workload("recreated")
	b10, b30 := c.newBOM(t, w, 10), c.newBOM(t, w, 30)
	mustExport(t, s, b10)
	mustExport(t, s, b30)
	ts := NewTombstone(w, 20)
	ts.Stale = true
	mustTombstone(t, s, ts)
	c.check(t, s, w, c.opts.stored(2, b30.BomHash, false))
}

func (c suite) newerExportRevives(t *testing.T) {
	s := c.open(t)
	w := Workload("revived")
	b1, b2 := c.newBOM(t, w, 10), c.newBOM(t, w, 30)
	mustExport(t, s, b1)
	mustTombstone(t, s, NewTombstone(w, 20))
	mustExport(t, s, b2)
	want := c.opts.stored(2, b2.BomHash, false)
	if c.opts.TombstoneRemoves {
		want = Stored{BOMs: 1, Latest: b2.BomHash} // b1 went with the tombstone
	}
	c.check(t, s, w, want)
}

func (c suite) canceledContext(t *testing.T) {
	s := c.open(t)
	w := Workload("canceled")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := within(t, func() error { return s.Export(cctx, c.newBOM(t, w, 10)) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("export with canceled context: got %v, want an error wrapping context.Canceled", err)
	}
	err = within(t, func() error { return s.Tombstone(cctx, NewTombstone(w, 20)) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("tombstone with canceled context: got %v, want an error wrapping context.Canceled", err)
	}
	c.check(t, s, w, Stored{})
	// The sink still works afterwards.
	b := c.newBOM(t, w, 30)
	mustExport(t, s, b)
	c.check(t, s, w, Stored{BOMs: 1, Latest: b.BomHash})
}

func (c suite) concurrentDifferentBOMs(t *testing.T) {
	s := c.open(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	boms := make([]sinks.BOM, n)
	for i := range boms {
		boms[i] = c.newBOM(t, Workload(fmt.Sprintf("parallel-%d", i)), uint64(100+i))
	}
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Export(ctx, boms[i])
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("export %d: %v", i, errs[i])
		}
		c.check(t, s, boms[i].Workload, Stored{BOMs: 1, Latest: boms[i].BomHash})
	}
}

// storeOutage: while the store is down, Export and Tombstone return
// transient errors (the runner retries them) and leave nothing behind; once
// it is back, the same calls succeed.
func (c suite) storeOutage(t *testing.T) {
	if c.opts.NoOutage != "" {
		t.Skip(c.opts.NoOutage)
	}
	s := c.open(t)
	w := Workload("outage")
	b1, b2, ts := c.newBOM(t, w, 10), c.newBOM(t, w, 20), NewTombstone(w, 30)
	mustExport(t, s, b1)
	c.opts.Outage(t, s, true)
	up := false
	defer func() {
		if !up {
			c.opts.Outage(t, s, false)
		}
	}()
	err := within(t, func() error { return s.Export(ctx, b2) })
	if err == nil || sinks.IsPermanent(err) {
		t.Fatalf("export while the store is down: got %v, want a transient error", err)
	}
	err = within(t, func() error { return s.Tombstone(ctx, ts) })
	if (err == nil && !c.opts.TombstonesNotStored) || sinks.IsPermanent(err) {
		t.Fatalf("tombstone while the store is down: got %v, want a transient error", err)
	}
	c.opts.Outage(t, s, false)
	up = true
	c.check(t, s, w, Stored{BOMs: 1, Latest: b1.BomHash})
	mustExport(t, s, b2)
	c.check(t, s, w, c.opts.stored(2, b2.BomHash, false))
	mustTombstone(t, s, ts)
	c.check(t, s, w, c.opts.stored(2, b2.BomHash, true))
}

func (c suite) errorClassification(t *testing.T) {
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
	s := c.open(t)
	for _, b := range c.opts.Invalid {
		if err := b.Check(); err != nil {
			t.Fatalf("Options.Invalid: %s fails BOM.Check (%v): the runner would not pass it", b.Workload, err)
		}
		if err := s.Export(ctx, b); !sinks.IsPermanent(err) {
			t.Errorf("export of invalid %s: got %v, want a permanent error", b.Workload, err)
		}
	}
	for _, ts := range c.opts.InvalidTombstones {
		if err := s.Tombstone(ctx, ts); !sinks.IsPermanent(err) {
			t.Errorf("tombstone of invalid %s: got %v, want a permanent error", ts.Workload, err)
		}
	}
}

// strictConfig: a configuration block with a key the sink does not know
// is rejected, naming the key, through the registry and DecodeConfig.
func (c suite) strictConfig(t *testing.T) {
	const typ, unknown = "sinktest", "sinktestUnknownKey"
	reg := sinks.Registry{typ: c.opts.Type}
	if _, err := reg.Decode(typ, maps.Clone(c.opts.Config)); err != nil {
		t.Fatalf("Options.Config does not decode: %v", err)
	}
	raw := maps.Clone(c.opts.Config)
	if raw == nil {
		raw = map[string]any{}
	}
	raw[unknown] = "x"
	if _, err := reg.Decode(typ, raw); err == nil || !strings.Contains(err.Error(), `"`+unknown+`"`) {
		t.Errorf("Registry.Decode with key %q: got %v, want an error naming it", unknown, err)
	}
	if err := sinks.DecodeConfig(raw, c.opts.Type.NewConfig()); err == nil || !strings.Contains(err.Error(), `"`+unknown+`"`) {
		t.Errorf("DecodeConfig with key %q: got %v, want an error naming it", unknown, err)
	}
}

// checker: a sink that implements sinks.Checker reports every check passed
// against a working store, at least one failed, with its cause, against a
// broken one, and all passed again once the store is back.
func (c suite) checker(t *testing.T) {
	s := c.open(t)
	ch, ok := s.(sinks.Checker)
	if !ok {
		if c.opts.NoChecker == "" {
			t.Fatal("the sink does not implement sinks.Checker: implement it, or say why in Options.NoChecker")
		}
		t.Skip(c.opts.NoChecker)
	}
	if c.opts.NoOutage != "" {
		t.Skip(c.opts.NoOutage)
	}
	c.wantChecks(t, ch, true)
	c.opts.Outage(t, s, true)
	c.wantChecks(t, ch, false)
	c.opts.Outage(t, s, false)
	c.wantChecks(t, ch, true)
}

// wantChecks runs the checks and wants them all passed (pass) or at least
// one failed; every check is named, and a failed one says why.
func (c suite) wantChecks(t *testing.T, ch sinks.Checker, pass bool) {
	t.Helper()
	var checks []sinks.Check
	_ = within(t, func() error { checks = ch.Check(ctx); return nil })
	if len(checks) == 0 {
		t.Fatal("Check returned no check")
	}
	failed := 0
	for _, k := range checks {
		switch {
		case k.Name == "":
			t.Errorf("a check has no name (err %v)", k.Err)
		case k.Err != nil && strings.TrimSpace(k.Err.Error()) == "":
			t.Errorf("check %q failed without a cause", k.Name)
		case k.Err != nil && pass:
			t.Errorf("check %q failed against a working store: %v", k.Name, k.Err)
		}
		if k.Err != nil {
			failed++
		}
	}
	if !pass && failed == 0 {
		t.Errorf("every check passed against a broken store: %v", checks)
	}
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
	if err := s.Export(ctx, b); err != nil {
		t.Fatalf("export %s@%d: %v", b.Workload, b.ChangeSeq, err)
	}
}

func mustTombstone(t *testing.T, s sinks.Sink, ts sinks.Tombstone) {
	t.Helper()
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatalf("tombstone %s@%d: %v", ts.Workload, ts.ChangeSeq, err)
	}
}
