package runner

import (
	"os"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
	"github.com/bomstream/bomstream/stream/ledger"
)

// LedgerEntry reads what the runner recorded of one workload, and says so
// when it recorded nothing; with the sink's Locate it tells where the
// applied version is.
func TestLedgerEntry(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	fs := newFileSink(t, "archive")
	w, gone := sinktest.Workload("chat"), sinktest.Workload("gone")
	v1, v2 := sinktest.NewBOM(w, 10), sinktest.NewBOM(w, 20)
	publishBOM(t, b, v1)
	publishBOM(t, b, v2)
	publishBOM(t, b, sinktest.NewBOM(gone, 30))
	publishTombstone(t, b, gone, 40, sinks.ReasonDeleted)
	r := start(t, b, fs, Config{}, nil)
	waitFor(t, "settled", func() bool { return settled(t, b, "sink-archive") })
	r.stop()

	ctx := testCtx(t)
	a, ok, err := LedgerEntry(ctx, b, "archive", w)
	if err != nil || !ok {
		t.Fatalf("chat: %v, %v", ok, err)
	}
	if a.ChangeSeq != v2.ChangeSeq || a.BomHash != v2.BomHash || a.Tombstone != "" || a.Cluster != w.Cluster || a.UID != w.UID ||
		a.Workload != w.String() || a.Key != ledgerKey(w) || a.StreamSeq == 0 {
		t.Fatalf("chat: %+v, want change %d, %s", a, v2.ChangeSeq, v2.BomHash)
	}
	locs := fs.Locate(sinks.Version{Workload: w, BomHash: a.BomHash, ChangeSeq: a.ChangeSeq, Latest: true})
	if len(locs) != 2 {
		t.Fatalf("locations %+v", locs)
	}
	for _, l := range locs {
		if got, err := os.ReadFile(l.Where); err != nil || string(got) != string(v2.Body) {
			t.Errorf("%s %s: %v, or not the applied BOM", l.What, l.Where, err)
		}
	}

	a, ok, err = LedgerEntry(ctx, b, "archive", gone)
	if err != nil || !ok || a.ChangeSeq != 40 || a.BomHash != "" || a.Tombstone != sinks.ReasonDeleted {
		t.Fatalf("gone: %+v, %v, %v; want the tombstone at 40", a, ok, err)
	}
	if a, ok, err := LedgerEntry(ctx, b, "archive", sinktest.Workload("never")); err != nil || ok || a != (Applied{}) {
		t.Fatalf("a workload never applied: %+v, %v, %v", a, ok, err)
	}
	if _, ok, err := LedgerEntry(ctx, b, "other", w); err != nil || ok {
		t.Fatalf("a sink that applied nothing: %v, %v", ok, err)
	}
}

// An entry the runner cannot read is an error, not "never applied".
func TestLedgerEntryUnreadable(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	w := sinktest.Workload("chat")
	l, err := ledger.Open(testCtx(t), b, "archive")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(testCtx(t), ledgerKey(w), []byte("{not json"), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LedgerEntry(testCtx(t), b, "archive", w); err == nil || ok {
		t.Fatalf("an unreadable entry: %v, %v", ok, err)
	}
}
