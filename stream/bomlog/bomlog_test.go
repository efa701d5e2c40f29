package bomlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bomlog"
	"github.com/bomstream/bomstream/stream/bustest"
)

// A tombstone appended twice is stored once, under its codec's message
// id, and Last reads it back decoded; a subject with nothing has no last.
func TestAppendOnceAndLast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	boms := bomlog.New(bustest.Open(t, stream.Config{}))
	w := schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "chat", UID: "u1"}
	if _, ok, err := boms.Last(ctx, schemas.BOMsSubject(w)); err != nil || ok {
		t.Fatalf("last of an empty subject: ok %v, %v", ok, err)
	}
	m := schemas.BOMMessage{Workload: w, ChangeSeq: 7, Tombstone: schemas.TombstoneDeleted}
	var seqs []uint64
	for range 2 {
		h, body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out := nats.NewMsg(m.Subject())
		out.Header, out.Data = h, body
		ack, err := boms.Append(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) == 1 && !ack.Duplicate {
			t.Errorf("second append not a duplicate: %+v", ack)
		}
		seqs = append(seqs, ack.Seq)
	}
	last, ok, err := boms.Last(ctx, schemas.BOMsSubject(w))
	if err != nil || !ok || last.Err != nil {
		t.Fatalf("last: ok %v, %v, decoding %v", ok, err, last.Err)
	}
	if last.Seq != seqs[0] || last.ChangeSeq != 7 || !last.IsTombstone() || last.Workload.UID != "u1" {
		t.Errorf("last %+v, want the tombstone at seq %d", last, seqs[0])
	}
}
