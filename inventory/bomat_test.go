package inventory_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/schemas"
)

// BOMAt (get --at) answers from the inventory's version in effect, and says why
// there is no BOM: before the first version, after a tombstone, or none.
func TestBOMAtEdges(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	wl := inventory.Workload{Versions: []inventory.Version{
		{Time: t0, ChangeSeq: 1, BomHash: "a"},
		{Time: t0.Add(time.Hour), ChangeSeq: 2, BomHash: "b"},
		{Time: t0.Add(2 * time.Hour), ChangeSeq: 3, Tombstone: schemas.TombstoneNotServing},
		{Time: t0.Add(3 * time.Hour), ChangeSeq: 4, BomHash: "d"},
		{Time: t0.Add(4 * time.Hour), ChangeSeq: 5, Tombstone: schemas.TombstoneDeleted},
	}}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		name string
		at   time.Time
		want string // the bomHash printed, or what the error says
	}{
		{"before the first version", t0.Add(-time.Second), "no BOM at " + stamp(t0.Add(-time.Second)) + " (the first is from " + stamp(t0) + ")"},
		{"exactly at the first", t0, "a"},
		{"exactly at the second", t0.Add(time.Hour), "b"},
		{"after not serving", t0.Add(150 * time.Minute), "not serving since " + stamp(t0.Add(2*time.Hour))},
		{"serving again", t0.Add(3 * time.Hour), "d"},
		{"after the deletion", t0.Add(100 * time.Hour), "deleted at " + stamp(t0.Add(4*time.Hour))},
		{"now", time.Time{}, "deleted at"},
	} {
		v, err := wl.BOMAt(tc.at)
		got := v.BomHash
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := (&inventory.Workload{}).BOMAt(time.Time{}); err == nil || !strings.Contains(err.Error(), "no BOM: it serves no model") {
		t.Errorf("no versions: %v", err)
	}
}
