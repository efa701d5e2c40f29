package rerender

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/transformer"
	"github.com/bomstream/bomstream/transformer/service"
)

// rules is what the fake transformer knows: its version, and per image the
// components it finds (none: the workload serves nothing).
type rules struct {
	version string
	found   map[string][]string
}

// fakeRenderer renders with the rules it holds now; a test swaps them as
// an upgrade would. With a barrier, the renders of one event wait for
// each other.
type fakeRenderer struct {
	r       atomic.Pointer[rules]
	barrier atomic.Pointer[barrier]
}

// barrier holds the renders of an event until n of them wait (or a while
// passed), so that n passes decide on the same last event at once.
type barrier struct {
	mu      sync.Mutex
	n       int
	waiting map[string]int
	open    map[string]chan struct{}
}

func newBarrier(n int) *barrier {
	return &barrier{n: n, waiting: map[string]int{}, open: map[string]chan struct{}{}}
}

func (b *barrier) wait(key string) {
	b.mu.Lock()
	ch := b.open[key]
	if ch == nil {
		ch = make(chan struct{})
		b.open[key] = ch
	}
	b.waiting[key]++
	if b.waiting[key] == b.n {
		close(ch)
	}
	b.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
	}
}

func (f *fakeRenderer) set(version string, found map[string][]string) {
	f.r.Store(&rules{version: version, found: found})
}

func (f *fakeRenderer) Render(ev schemas.WorkloadChange) (transformer.Result, error) {
	if b := f.barrier.Load(); b != nil && ev.Time.Equal(eventTime) { // the originals, not the copies
		b.wait(ev.ID)
	}
	r := f.r.Load()
	w := ev.Data.Workload
	names := r.found[ev.Data.Inputs.Components[0].Containers[0].Image]
	if len(names) == 0 {
		return transformer.Result{Workload: w, Skipped: "nothing"}, nil
	}
	var comps []map[string]string
	for _, n := range names {
		comps = append(comps, map[string]string{"type": "application", "name": n})
	}
	doc := map[string]any{
		"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
		"serialNumber": "urn:uuid:" + r.version + ev.Data.InputHash,
		"metadata":     map[string]any{"timestamp": ev.Time.Format(time.RFC3339Nano), "tools": map[string]any{"components": []map[string]string{{"name": "bomstream", "version": r.version}}}},
		"components":   comps,
	}
	bom, err := schemas.CanonicalJSON(doc)
	if err != nil {
		return transformer.Result{}, err
	}
	return transformer.Result{Workload: w, BOM: bom, BomHash: schemas.BomHash(bom)}, nil
}

// eventTime is the time of the events the tests publish.
var eventTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func workload(uid string) schemas.Workload {
	return schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "w-" + uid, UID: uid}
}

func event(t *testing.T, w schemas.Workload, image string) schemas.WorkloadChange {
	t.Helper()
	ev, err := schemas.NewObserved("test", eventTime, &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{{Name: "main", Locator: "spec.template",
			Containers: []schemas.Container{{Name: "c", Locator: "spec.template.spec.containers[0]", Image: image}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// fixture is a store with workloads a, b, c (images of the same names)
// rendered by a running transformer stage under version v1: a and b serve
// (vllm), c serves nothing.
type fixture struct {
	bus  *stream.Bus
	r    *fakeRenderer
	stop func() // stops the transformer stage
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{bus: bustest.Open(t, stream.Config{}), r: &fakeRenderer{}}
	f.r.set("v1", map[string][]string{"a": {"vllm"}, "b": {"vllm"}})
	svc, err := service.New(f.bus, f.r, service.Config{}, zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	var once sync.Once
	f.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(f.stop)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := changelog.New(f.bus).PublishChange(ctx, event(t, workload(id), id)); err != nil {
			t.Fatal(err)
		}
	}
	f.drain(t)
	return f
}

// drain waits until the transformer handled every event of CHANGES.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	bustest.Eventually(t, "transformer drained", time.Minute, func() bool {
		ok, err := f.bus.Durables().CaughtUp(context.Background(), schemas.StreamChanges, service.DefaultDurable)
		return err == nil && ok
	})
}

// changes counts the events of each workload on CHANGES.
func (f *fixture) changes(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range []string{"a", "b", "c"} {
		_, seq, ok, err := changelog.New(f.bus).LastChange(context.Background(), workload(id))
		if err != nil || !ok {
			t.Fatalf("last change of %s: %v", id, err)
		}
		out[id] = int(seq) // the sequence moves when an event is appended
	}
	return out
}

func (f *fixture) lastSeq(t *testing.T) uint64 {
	t.Helper()
	n, err := f.bus.Reader().LastSeq(context.Background(), schemas.StreamChanges)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) rerender(t *testing.T, dry bool) Report {
	t.Helper()
	rep, err := Rerender(context.Background(), f.bus, f.r, Options{DryRun: dry, Fingerprint: "fp-test", Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("Rerender: %v", err)
	}
	return rep
}

func whoChanged(rep Report) map[string]string {
	out := map[string]string{}
	for _, c := range rep.Changes {
		out[c.Workload.UID] = c.What
	}
	return out
}

func TestUnchangedAndToolVersionOnlyPublishNothing(t *testing.T) {
	f := newFixture(t)
	before := f.lastSeq(t)
	if rep := f.rerender(t, false); len(rep.Changes) != 0 || rep.Workloads != 3 {
		t.Fatalf("same transformer: %+v", rep)
	}
	f.r.set("v2", map[string][]string{"a": {"vllm"}, "b": {"vllm"}}) // a new tool version, same rules
	if rep := f.rerender(t, false); len(rep.Changes) != 0 {
		t.Fatalf("tool version only: %+v", rep)
	}
	if after := f.lastSeq(t); after != before {
		t.Fatalf("CHANGES went from %d to %d", before, after)
	}
}

func TestChangedRulesOneEventPerAffectedWorkload(t *testing.T) {
	f := newFixture(t)
	before := f.changes(t)
	beforeSeq := f.lastSeq(t)
	// v2 finds a model beside a's runtime, and c's runtime; b is as it was.
	f.r.set("v2", map[string][]string{"a": {"vllm", "llama"}, "b": {"vllm"}, "c": {"tgi"}})

	dry := f.rerender(t, true)
	if got := whoChanged(dry); len(got) != 2 || got["a"] != "+application llama" || got["c"] != "newly serving" {
		t.Fatalf("dry run: %v", got)
	}
	if n := f.lastSeq(t); n != beforeSeq {
		t.Fatalf("the dry run published: CHANGES %d -> %d", beforeSeq, n)
	}

	rep := f.rerender(t, false)
	if got := whoChanged(rep); len(got) != 2 || got["a"] == "" || got["c"] == "" {
		t.Fatalf("rerender: %v", got)
	}
	after := f.changes(t)
	if after["a"] == before["a"] || after["c"] == before["c"] || after["b"] != before["b"] {
		t.Fatalf("last sequences before %v, after %v", before, after)
	}
	if n := f.lastSeq(t); n != beforeSeq+2 {
		t.Fatalf("CHANGES %d -> %d, want two events", beforeSeq, n)
	}
	f.drain(t)
	// Each new event made one new BOM version, rendered by the stage.
	for _, id := range []string{"a", "c"} {
		m, err := f.bus.Reader().LastMsg(context.Background(), schemas.StreamBOMs, schemas.BOMsSubject(workload(id)))
		if err != nil || m == nil {
			t.Fatalf("BOM of %s: %v", id, err)
		}
		bm, err := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
		if err != nil || bm.ChangeSeq != uint64(after[id]) {
			t.Fatalf("BOM of %s: change %d, want %d (%v)", id, bm.ChangeSeq, after[id], err)
		}
	}
	// Run again: everything is up to date.
	if rep := f.rerender(t, false); len(rep.Changes) != 0 {
		t.Fatalf("second run: %+v", rep)
	}
	if n := f.lastSeq(t); n != beforeSeq+2 {
		t.Fatalf("second run published: CHANGES %d", n)
	}
}

func TestNoLongerServing(t *testing.T) {
	f := newFixture(t)
	f.r.set("v2", map[string][]string{"a": {"vllm"}})
	if got := whoChanged(f.rerender(t, false)); len(got) != 1 || got["b"] != "no longer serving" {
		t.Fatalf("rerender: %v", got)
	}
	f.drain(t)
	m, err := f.bus.Reader().LastMsg(context.Background(), schemas.StreamBOMs, schemas.BOMsSubject(workload("b")))
	if err != nil || m == nil || m.Header.Get(schemas.HeaderTombstoneReason) != schemas.TombstoneNotServing {
		t.Fatalf("b's last BOMS message: %v %v", m, err)
	}
}

func TestConcurrentRunsAppendOnce(t *testing.T) {
	f := newFixture(t)
	beforeSeq := f.lastSeq(t)
	f.r.set("v2", map[string][]string{"a": {"vllm", "x"}, "b": {"vllm", "x"}, "c": {"x"}})
	// Every pass renders a workload's last event before any appends: all
	// four expect the same last sequence, and one wins. The stage is
	// stopped, so that no pass reads a BOM rendered from a copy.
	f.stop()
	f.r.barrier.Store(newBarrier(4))
	var wg sync.WaitGroup
	reps := make([]Report, 4)
	for i := range reps {
		wg.Go(func() {
			reps[i] = f.rerender(t, false)
		})
	}
	wg.Wait()
	f.r.barrier.Store(nil)
	published, pending := map[string]int{}, 0
	for _, rep := range reps {
		pending += rep.Pending
		for _, c := range rep.Changes {
			published[c.Workload.UID]++
		}
	}
	if pending != 9 { // the three others of each workload lost the append, and found the copy not handled yet
		t.Errorf("passes that lost a race: %d, want 9", pending)
	}
	if len(published) != 3 || published["a"] != 1 || published["b"] != 1 || published["c"] != 1 {
		t.Fatalf("published per workload: %v", published)
	}
	if n := f.lastSeq(t); n != beforeSeq+3 {
		t.Fatalf("CHANGES %d -> %d, want three events", beforeSeq, n)
	}
}

func TestAtStart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.r.set("v2", map[string][]string{"a": {"vllm", "x"}, "b": {"vllm"}})
	opts := Options{Fingerprint: "fp-2"}
	rep, ran, err := AtStart(ctx, f.bus, f.r, opts, 3)
	if err != nil || !ran || len(rep.Changes) != 1 {
		t.Fatalf("missing fingerprint: ran %v, %+v, %v", ran, rep, err)
	}
	if rec, ok, err := Stored(ctx, f.bus); err != nil || !ok || rec.Fingerprint != "fp-2" || rec.OtherUpTo != 3 {
		t.Fatalf("stored %+v %v, %v", rec, ok, err)
	}
	if _, ran, err := AtStart(ctx, f.bus, f.r, opts, 3); err != nil || ran {
		t.Fatalf("same fingerprint: ran %v, %v", ran, err)
	}
}

// A store no transformer has handled anything in is untouched; one whose
// BOMS holds a message, or whose transformer acked an event, is not.
func TestUntouched(t *testing.T) {
	ctx := context.Background()
	fresh := bustest.Open(t, stream.Config{})
	if _, _, err := changelog.New(fresh).PublishChange(ctx, event(t, workload("a"), "a")); err != nil {
		t.Fatal(err)
	}
	if ok, err := Untouched(ctx, fresh, 0); err != nil || !ok {
		t.Errorf("a store with events but no BOM and no ack floor: untouched %v, %v", ok, err)
	}
	if ok, err := Untouched(ctx, fresh, 1); err != nil || ok {
		t.Errorf("a store whose transformer acked an event (rendered to nothing, say): untouched %v, %v", ok, err)
	}
	f := newFixture(t)
	if ok, err := Untouched(ctx, f.bus, 0); err != nil || ok {
		t.Errorf("a store with BOMs: untouched %v, %v", ok, err)
	}
}
