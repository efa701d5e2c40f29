package collector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
)

func openBus(t *testing.T) *stream.Bus { return bustest.Open(t, stream.Config{}) }

func workloadEvent(t *testing.T, name, image string) schemas.WorkloadChange {
	t.Helper()
	in := &schemas.Inputs{
		Workload: schemas.Workload{Cluster: "c", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: "uid-" + name},
		Components: []schemas.Component{{Name: name, Locator: "spec.template",
			Containers: []schemas.Container{{Name: "main", Locator: "spec.template.spec.containers[0]", Image: image}}}},
	}
	ev, err := schemas.NewObserved("test", time.Unix(0, 0), in)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func newReconciler(t *testing.T, bus *stream.Bus, source string, share float64, reg prometheus.Registerer) *collector.Reconciler {
	t.Helper()
	r, err := collector.NewReconciler(collector.ReconcilerConfig{Source: source, Cluster: "c", MaxTombstoneShare: share}, changelog.New(bus), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Load(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return r
}

func events(t *testing.T, names ...string) []schemas.WorkloadChange {
	var out []schemas.WorkloadChange
	for _, n := range names {
		out = append(out, workloadEvent(t, n, "img:1"))
	}
	return out
}

// Two sources never tombstone each other's workloads; each tombstones its own.
func TestReconcileOwnership(t *testing.T) {
	ctx := context.Background()
	bus := openBus(t)
	a := newReconciler(t, bus, "a", 1, nil)
	b := newReconciler(t, bus, "b", 1, nil)
	now := time.Unix(100, 0)
	if res, err := a.Sync(ctx, events(t, "a1", "a2"), nil, now); err != nil || res.Published != 2 {
		t.Fatalf("a first pass: %+v %v", res, err)
	}
	if err := b.Load(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Sync(ctx, events(t, "b1"), nil, now); err != nil || res.Published != 1 || res.Tombstones != 0 {
		t.Fatalf("b first pass: %+v %v (must not tombstone a's workloads)", res, err)
	}
	if err := a.Load(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := a.Sync(ctx, events(t, "a1"), nil, now)
	if err != nil || res.Published != 0 || res.Tombstones != 1 {
		t.Fatalf("a second pass: %+v %v, want one tombstone (a2)", res, err)
	}
	states := map[string]string{}
	if err := changelog.New(bus).LatestChanges(ctx, "c", func(ev schemas.WorkloadChange, _ uint64) error {
		states[ev.Data.Workload.Name] = ev.Type + " " + ev.Source
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a1": schemas.TypeObserved + " a", "a2": schemas.TypeDeleted + " a", "b1": schemas.TypeObserved + " b",
	}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("states = %v, want %v", states, want)
	}
}

// A pass that would tombstone more than the share is held until the next
// pass finds the same workloads gone; a workload that is not visible is never
// tombstoned.
func TestReconcileGuardAndVisibility(t *testing.T) {
	ctx := context.Background()
	bus := openBus(t)
	reg := prometheus.NewRegistry()
	r := newReconciler(t, bus, "src", 0, reg) // default share: half
	now := time.Unix(100, 0)
	if _, err := r.Sync(ctx, events(t, "w1", "w2", "w3", "w4", "w5"), nil, now); err != nil {
		t.Fatal(err)
	}
	// Lost visibility: w2..w5 are not listed, but their kind cannot be seen.
	res, err := r.Sync(ctx, events(t, "w1"), func(w schemas.Workload) bool { return false }, now)
	if err != nil || res.Tombstones != 0 || res.Held != 0 {
		t.Fatalf("invisible pass: %+v %v, want nothing", res, err)
	}
	// Four of five gone: held.
	res, err = r.Sync(ctx, events(t, "w1"), nil, now)
	if err != nil || res.Tombstones != 0 || res.Held != 4 {
		t.Fatalf("first pass: %+v %v, want 4 held", res, err)
	}
	if got := testutil.ToFloat64(findGauge(t, reg)); got != 4 {
		t.Errorf("bomstream_tombstones_held = %v, want 4", got)
	}
	// A different result (w2 came back), three of five: held again.
	res, _ = r.Sync(ctx, events(t, "w1", "w2"), nil, now)
	if res.Held != 3 || res.Tombstones != 0 {
		t.Fatalf("changed pass: %+v, want 3 held", res)
	}
	// The same result again: confirmed.
	res, err = r.Sync(ctx, events(t, "w1", "w2"), nil, now)
	if err != nil || res.Tombstones != 3 || res.Held != 0 {
		t.Fatalf("confirming pass: %+v %v, want 3 tombstones", res, err)
	}
	if got := testutil.ToFloat64(findGauge(t, reg)); got != 0 {
		t.Errorf("bomstream_tombstones_held = %v after confirmation, want 0", got)
	}
	// One of two gone is not more than half: written at once.
	res, err = r.Sync(ctx, events(t, "w1"), nil, now)
	if err != nil || res.Tombstones != 1 {
		t.Fatalf("small pass: %+v %v, want 1 tombstone", res, err)
	}
	// ConfirmTombstones lets everything through.
	c, err := collector.NewReconciler(collector.ReconcilerConfig{Source: "src", Cluster: "c", ConfirmTombstones: true}, changelog.New(bus), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Load(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Sync(ctx, nil, nil, now); err != nil || res.Tombstones != 1 {
		t.Fatalf("confirmed empty pass: %+v %v, want 1 tombstone", res, err)
	}
}

func findGauge(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "bomstream_tombstones_held" {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatal("bomstream_tombstones_held not registered")
	return nil
}

// A source owns the workloads written under its earlier names (Claims).
func TestReconcileClaims(t *testing.T) {
	ctx := context.Background()
	bus := openBus(t)
	old := newReconciler(t, bus, "bomstream/manifests", 1, nil)
	now := time.Unix(100, 0)
	if _, err := old.Sync(ctx, events(t, "x1", "x2"), nil, now); err != nil {
		t.Fatal(err)
	}
	r, err := collector.NewReconciler(collector.ReconcilerConfig{Source: "bomstream/manifests/dir", Cluster: "c", Claims: []string{"bomstream/manifests"}, MaxTombstoneShare: 1}, changelog.New(bus), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Load(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := r.Sync(ctx, events(t, "x1"), nil, now)
	if err != nil || res.Published != 0 || res.Tombstones != 1 {
		t.Fatalf("pass = %+v, %v; want x2 tombstoned and x1 left alone", res, err)
	}
}

// racingPublisher decides each workload a second time, through another
// path of the same reconciler, just before the stream takes it: the race of
// a reconcile pass (Sync) with a worker deciding the same workload (Observe).
type racingPublisher struct {
	*changelog.Log
	r       *collector.Reconciler
	viaSync bool // PublishChange races with Sync; else AppendChanges races with Observe
}

func (p *racingPublisher) PublishChange(ctx context.Context, ev schemas.WorkloadChange) (uint64, bool, error) {
	if p.viaSync && ev.Type == schemas.TypeObserved {
		if _, err := p.r.Sync(ctx, []schemas.WorkloadChange{ev}, nil, time.Unix(100, 0)); err != nil {
			return 0, false, err
		}
	}
	return p.Log.PublishChange(ctx, ev)
}

func (p *racingPublisher) AppendChanges(ctx context.Context, appends []changelog.Append) []changelog.AppendResult {
	if !p.viaSync {
		for _, a := range appends {
			if _, err := p.r.Observe(ctx, a.Event); err != nil {
				panic(err)
			}
		}
	}
	return p.Log.AppendChanges(ctx, appends)
}

// A workload decided at once by a pass and by a worker is published once,
// and stays the source's own: deleted, it gets its tombstone. (The path
// that found it on the stream already recorded it with the source it read
// before, none, and the workload was never tombstoned.)
func TestReconcileConcurrentDecisionsKeepOwnership(t *testing.T) {
	for _, viaSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("viaSync=%v", viaSync), func(t *testing.T) {
			ctx := context.Background()
			bus := openBus(t)
			p := &racingPublisher{Log: changelog.New(bus), viaSync: viaSync}
			r, err := collector.NewReconciler(collector.ReconcilerConfig{Source: "a", Cluster: "c", MaxTombstoneShare: 1}, p, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.r = r
			if err := r.Load(ctx, nil); err != nil {
				t.Fatal(err)
			}
			ev := workloadEvent(t, "m", "img:1")
			if viaSync {
				if _, err := r.Observe(ctx, ev); err != nil {
					t.Fatal(err)
				}
			} else if _, err := r.Sync(ctx, []schemas.WorkloadChange{ev}, nil, time.Unix(100, 0)); err != nil {
				t.Fatal(err)
			}
			if owned := r.Owned(); len(owned) != 1 || owned[0].UID != "uid-m" {
				t.Fatalf("owned after the concurrent decisions: %+v, want uid-m", owned)
			}
			res, err := r.Remove(ctx, []string{"uid-m"}, nil, time.Unix(200, 0))
			if err != nil || res.Tombstones != 1 {
				t.Fatalf("remove: %+v %v, want one tombstone", res, err)
			}
		})
	}
}
