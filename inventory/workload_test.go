package inventory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

// The version in effect at t, the one every reader takes (find --at, get
// --at, the API, the pages): none before the first version, a version from
// the very time it was observed, a tombstone once it is, the last one for
// a zero time, and a version observed earlier than its predecessor in
// effect only with it.
func TestVersionAtEdges(t *testing.T) {
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	w := Workload{ID: old.id(), Versions: []Version{
		{Time: at(0), ChangeSeq: 1, BomHash: "a"},
		{Time: at(2), ChangeSeq: 2, BomHash: "b"},
		{Time: at(1), ChangeSeq: 3, BomHash: "c"}, // observed before its predecessor: in effect from at(2)
		{Time: at(4), ChangeSeq: 4, Tombstone: schemas.TombstoneDeleted},
	}}
	for _, tc := range []struct {
		name string
		t    time.Time
		want uint64 // change sequence in effect; 0 for none
	}{
		{"before the first version", at(0).Add(-time.Nanosecond), 0},
		{"exactly at the first", at(0), 1},
		{"between the first and the second", at(1), 1},
		{"exactly at the second, with the one observed before it", at(2), 3},
		{"just before the tombstone", at(4).Add(-time.Nanosecond), 3},
		{"exactly at the tombstone", at(4), 4},
		{"after the tombstone", at(100), 4},
		{"now (zero)", time.Time{}, 4},
	} {
		v, ok := w.VersionAt(tc.t)
		if got := map[bool]uint64{true: v.ChangeSeq}[ok]; got != tc.want {
			t.Errorf("%s: version %d in effect (found %v), want %d", tc.name, got, ok, tc.want)
		}
		e, ok := w.EntryAt(tc.t)
		if got := map[bool]uint64{true: e.ChangeSeq}[ok]; got != tc.want {
			t.Errorf("%s: entry of version %d (found %v), want %d", tc.name, got, ok, tc.want)
		}
	}
	if v, _ := w.VersionAt(at(5)); v.State() != StateDeleted {
		t.Errorf("after the tombstone: state %q, want %q", v.State(), StateDeleted)
	}
	if e, _ := w.EntryAt(at(5)); e.State != StateDeleted || e.BomHash != "" {
		t.Errorf("after the tombstone: entry %+v, want deleted", e)
	}
	if _, ok := (&Workload{}).VersionAt(time.Time{}); ok {
		t.Error("a workload without versions has one in effect now")
	}
}

// History reads one workload's versions as the index holds them.
func TestHistoryIsTheIndexOfOneWorkload(t *testing.T) {
	bus, f := fleetBus(t)
	f.serve(spec{ns: old.ns, name: old.name, image: "vllm/vllm-openai:v0.9.1", model: old.model, declared: true}, t0.Add(48*time.Hour))
	f.tombstone(tgi, schemas.TombstoneNotServing, t0.Add(49*time.Hour))
	ix := load(t, bus)
	for _, s := range []spec{old, tgi, pinned} {
		want, ok := ix.Workload(s.id().Cluster, s.ns, s.id().Kind, s.name)
		if !ok {
			t.Fatalf("%s not in the index", s.name)
		}
		got, err := History(context.Background(), bus.Reader(), want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || !slices.EqualFunc(got.Versions, want.Versions, func(a, b Version) bool {
			return a.ChangeSeq == b.ChangeSeq && a.StreamSeq == b.StreamSeq && a.Time.Equal(b.Time) && a.Tombstone == b.Tombstone &&
				a.BomHash == b.BomHash && slices.Equal(a.Runtimes, b.Runtimes)
		}) {
			t.Errorf("%s: History %+v\nthe index %+v", s.name, got.Versions, want.Versions)
		}
	}
	none := schemas.Workload{Cluster: "c1", Namespace: "ml", Kind: "Deployment", Name: "none", UID: "no-such-uid"}
	if got, err := History(context.Background(), bus.Reader(), none); err != nil || len(got.Versions) != 0 || got.ID != none {
		t.Errorf("history of an unknown workload: %+v %v", got, err)
	}
}
