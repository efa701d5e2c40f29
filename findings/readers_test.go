package findings

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

// TestIndexAgreesWithList: the index, loaded once and then incrementally,
// answers what List reads from the stream each time: the same findings in
// each state, the same open count per workload, in the same order.
func TestIndexAgreesWithList(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st := startStage(t, bus, nil)
	ctx := context.Background()
	ix := stored.NewIndex()
	if err := ix.Load(ctx, bus.Reader()); err != nil || !ix.Loaded() { // no FINDINGS yet: empty, and loaded
		t.Fatalf("load before any finding: %v, loaded %v", err, ix.Loaded())
	}
	ws := make([]schemas.Workload, 30)
	for i := range ws {
		ws[i] = schemas.Workload{Cluster: []string{"prod", "dev"}[i%2], Namespace: fmt.Sprintf("ns-%d", i%3), APIVersion: "apps/v1",
			Kind: "Deployment", Name: fmt.Sprintf("w-%02d", i), UID: fmt.Sprintf("uid-%02d", i)}
	}
	check := func(stage string) {
		t.Helper()
		if err := ix.Load(ctx, bus.Reader()); err != nil {
			t.Fatal(err)
		}
		for _, state := range []string{stored.StateOpen, stored.StateResolved, stored.StateAll} {
			for _, f := range []stored.Filter{{State: state}, {State: state, Cluster: "prod"}, {State: state, Namespace: "ns-1", Rule: "model-unpinned"}} {
				want, err := stored.List(ctx, bus.Reader(), f)
				if err != nil {
					t.Fatal(err)
				}
				sel, err := ix.Select(f, 0, 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sel.Events(ctx, bus.Reader())
				if err != nil {
					t.Fatal(err)
				}
				if sel.Total != len(want) || !slices.EqualFunc(got, want, func(a, b schemas.FindingEvent) bool {
					return a.Workload == b.Workload && a.Rule == b.Rule && a.Subject == b.Subject && a.State == b.State
				}) {
					t.Errorf("%s, %+v: the index selects %d, List %d", stage, f, sel.Total, len(want))
				}
				// A page holds the same findings as List's slice.
				page, _ := ix.Select(f, 5, 12)
				got, err = page.Events(ctx, bus.Reader())
				if err != nil {
					t.Fatal(err)
				}
				if lo, hi := min(5, len(want)), min(12, len(want)); page.Total != len(want) || len(got) != hi-lo || !slices.EqualFunc(got, want[lo:hi], func(a, b schemas.FindingEvent) bool {
					return a.Workload == b.Workload && a.Rule == b.Rule && a.Subject == b.Subject
				}) {
					t.Errorf("%s, %+v: page 5-12 differs from List's", stage, f)
				}
			}
		}
		open, err := stored.OpenFor(ctx, bus.Reader(), ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range open {
			if n := ix.OpenCount(o.Workload.Cluster, o.Workload.UID); n != len(o.Findings) {
				t.Errorf("%s: %s has %d open findings, the index counts %d", stage, o.Workload.Name, len(o.Findings), n)
			}
		}
	}
	for i, w := range ws {
		bom := bomJSON(false)
		if i%5 == 0 { // two findings of one rule: the order goes by subject
			bom = append(bytes.TrimSuffix(bom, []byte(`]}`)), `,{"bom-ref":"container:docker.io/a/b:1","type":"container","name":"docker.io/a/b","properties":[{"name":"bomstream:image:digest","value":"unresolved"}]}]}`...)
		}
		publishBOM(t, bus, w, uint64(i+1), bom, "")
	}
	bustest.Eventually(t, "30 evaluations", 30*time.Second, func() bool { return st.Counts().Evaluated >= 30 })
	check("all unpinned")
	// A third pinned (model-unpinned resolved), a third deleted (all resolved).
	for i, w := range ws {
		switch i % 3 {
		case 0:
			publishBOM(t, bus, w, uint64(100+i), bomJSON(true), "")
		case 1:
			publishBOM(t, bus, w, uint64(100+i), nil, schemas.TombstoneDeleted)
		}
	}
	bustest.Eventually(t, "50 evaluations", 30*time.Second, func() bool { return st.Counts().Evaluated >= 50 })
	check("pinned and deleted")
	// Open: the untouched third (10) holds model-unpinned and one or two
	// image-digest findings (two for w-05 and w-20), the pinned third (10)
	// one image-digest (its new BOM has one image).
	if sel, _ := ix.Select(stored.Filter{State: stored.StateOpen}, 0, 0); sel.Total != 10+10+2+10 {
		t.Errorf("open after the changes: %d, want 32", sel.Total)
	}
	if ix.Unreadable() != 0 {
		t.Errorf("%d unreadable events", ix.Unreadable())
	}
}
