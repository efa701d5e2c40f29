package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// recorder is a sink that stores nothing and records what it was called
// with, flags included, as "bom <name>@<seq>[ superseded]" and
// "tombstone <name>@<seq>[ stale]".
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Close() error { return nil }

func (r *recorder) Export(_ context.Context, b sinks.BOM) error {
	r.add(fmt.Sprintf("bom %s@%d", b.Workload.UID, b.ChangeSeq), b.Superseded, " superseded")
	return nil
}

func (r *recorder) Tombstone(_ context.Context, t sinks.Tombstone) error {
	r.add(fmt.Sprintf("tombstone %s@%d", t.Workload.UID, t.ChangeSeq), t.Stale, " stale")
	return nil
}

func (r *recorder) add(call string, flag bool, flagText string) {
	if flag {
		call += flagText
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

// take returns the calls so far, and forgets them.
func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := strings.Join(r.calls, ", ")
	r.calls = nil
	return out
}

// The runner tells the sink about order: a version older than one it
// applied for the same name (a workload deleted and re-created under its
// name, whose old messages come late; a replay that ignores the ledger)
// comes marked superseded or stale.
func TestOrderFlags(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	old, recreated := sinktest.Workload("chat"), sinktest.Workload("chat")
	recreated.UID = "new"
	rec := &recorder{}
	r := start(t, b, rec, Config{}, nil)
	publishBOM(t, b, sinktest.NewBOM(old, 10))
	publishBOM(t, b, sinktest.NewBOM(recreated, 30))
	waitFor(t, "the first two", func() bool { return r.Stats().Exported == 2 })
	if got := rec.take(); got != "bom "+old.UID+"@10, bom new@30" && got != "bom new@30, bom "+old.UID+"@10 superseded" {
		t.Fatalf("calls %q", got)
	}
	// A BOM of the old workload and its tombstone come late.
	publishBOM(t, b, sinktest.NewBOM(old, 15))
	waitFor(t, "the late BOM", func() bool { return r.Stats().Exported == 3 })
	publishTombstone(t, b, old, 20, sinks.ReasonDeleted)
	waitFor(t, "the late tombstone", func() bool { return r.Stats().Tombstones == 1 })
	if got, want := rec.take(), "bom "+old.UID+"@15 superseded, tombstone "+old.UID+"@20 stale"; got != want {
		t.Fatalf("late calls %q, want %q", got, want)
	}
	// A new version of the re-created workload is newest again.
	publishBOM(t, b, sinktest.NewBOM(recreated, 40))
	waitFor(t, "the newest", func() bool { return r.Stats().Exported == 4 })
	if got := rec.take(); got != "bom new@40" {
		t.Fatalf("calls %q", got)
	}
	r.stop()

	// A replay that ignores the ledger: every version once more, all but
	// the newest of the name marked, in BOMS order per workload.
	rr, err := New(b, rec, fast(Config{}), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Replay(testCtx(t), ReplayOptions{IgnoreLedger: true}, nil); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	for _, want := range []string{"bom " + old.UID + "@10 superseded", "bom new@30 superseded", "bom " + old.UID + "@15 superseded",
		"tombstone " + old.UID + "@20 stale", "bom new@40"} {
		if !strings.Contains(got+",", want+",") {
			t.Errorf("replay calls %q lack %q", got, want)
		}
	}
}

// A latest-only runner skips a late BOM of a workload whose name has a newer
// version applied, and still passes its late tombstone, marked stale.
func TestLatestOnlySkipsSupersededByName(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	old, recreated := sinktest.Workload("chat"), sinktest.Workload("chat")
	recreated.UID = "new"
	rec := &recorder{}
	yes := true
	r := start(t, b, rec, Config{LatestOnly: &yes}, nil)
	publishBOM(t, b, sinktest.NewBOM(recreated, 30))
	waitFor(t, "the newest", func() bool { return r.Stats().Exported == 1 })
	publishBOM(t, b, sinktest.NewBOM(old, 10))
	waitFor(t, "the late BOM", func() bool { return r.Stats().SkippedSuperseded == 1 })
	publishTombstone(t, b, old, 20, sinks.ReasonDeleted)
	waitFor(t, "the late tombstone", func() bool { return r.Stats().Tombstones == 1 })
	if got, want := rec.take(), "bom new@30, tombstone "+old.UID+"@20 stale"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// The runner checks each BOM before the sink sees it: a body that does not
// match its hash is dead-lettered, and the sink is not called.
func TestBOMFailingItsCheckIsDeadLettered(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	good := sinktest.NewBOM(sinktest.Workload("good"), 1)
	tampered := sinktest.NewBOM(sinktest.Workload("tampered"), 2)
	tampered.Body = []byte(strings.Replace(string(tampered.Body), "tampered", "tempered", 1))
	notJSON := sinktest.NewBOM(sinktest.Workload("not-json"), 3)
	notJSON.Body = []byte("{not json")
	notJSON.BomHash = schemas.BomHash(notJSON.Body)
	for _, bom := range []sinks.BOM{good, tampered, notJSON} {
		publishBOM(t, b, bom)
	}
	c := sinktest.NewCounter(&recorder{})
	r := start(t, b, c, fast(Config{}), nil)
	waitFor(t, "settled", func() bool { s := r.Stats(); return s.Exported == 1 && s.DeadLettered == 2 })
	if c.Calls() != 1 || c.Exports()[good.BomHash] != 1 {
		t.Fatalf("the sink saw %d exports (%v), want the good one only", c.Calls(), c.Exports())
	}
	reasons := map[string]string{}
	for _, d := range dlqMessages(t, b, "recorder") {
		bm, err := schemas.DecodeBOMMessage(d.Subject, d.Header, d.Data)
		if err != nil {
			t.Fatal(err)
		}
		reasons[bm.Workload.Name] = d.Reason
	}
	if !strings.Contains(reasons["tampered"], "does not match bom hash") || !strings.Contains(reasons["not-json"], "not JSON") {
		t.Fatalf("dead-letter reasons %v", reasons)
	}
}
