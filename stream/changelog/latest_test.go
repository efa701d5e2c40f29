package changelog

import (
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

func TestLatestChanges(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	if err := b.LatestChanges(ctx, "dev", func(schemas.WorkloadChange, uint64) error {
		t.Fatal("called on an empty stream")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, uid := range []string{"a", "b", "c"} {
		w := testWorkload(uid)
		for _, img := range []string{"vllm:1", "vllm:2", "vllm:3-" + uid} {
			ev := observed(t, w, img)
			if _, _, err := b.PublishChange(ctx, ev); err != nil {
				t.Fatal(err)
			}
			want[uid] = ev.Data.InputHash
		}
	}
	// Another cluster's workload is not listed; a malformed last event is
	// reported after the others.
	other := testWorkload("x")
	other.Cluster = "prod"
	if _, _, err := b.PublishChange(ctx, observed(t, other, "vllm:1")); err != nil {
		t.Fatal(err)
	}
	bad := testWorkload("z")
	if _, err := b.js.Publish(ctx, schemas.ChangesSubject(bad), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err := b.LatestChanges(ctx, "dev", func(ev schemas.WorkloadChange, seq uint64) error {
		if seq == 0 {
			t.Errorf("%s: no sequence", ev.Data.Workload.UID)
		}
		got[ev.Data.Workload.UID] = ev.Data.InputHash
		return nil
	})
	if err == nil {
		t.Error("the malformed event was not reported")
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for uid, h := range want {
		if got[uid] != h {
			t.Errorf("%s: got %s, want the last state %s", uid, got[uid], h)
		}
	}
	n := 0
	if err := b.LatestChanges(ctx, "dev", func(schemas.WorkloadChange, uint64) error { n++; return stream.ErrStop }); err != nil || n != 1 {
		t.Fatalf("ErrStop: %d calls, err %v", n, err)
	}
}
