package changelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/owner"
)

// history reads a workload's events in order, checking that each message's
// Nats-Msg-Id names the sequence of the message before it: the writer saw
// exactly that predecessor when it appended.
func history(t *testing.T, b testBus, w schemas.Workload) []schemas.WorkloadChange {
	t.Helper()
	var evs []schemas.WorkloadChange
	var prev uint64
	err := b.Reader().Messages(testContext(t), schemas.StreamChanges, schemas.ChangesSubject(w), 0, func(m *jetstream.RawStreamMsg) error {
		if got, want := m.Header.Get(jetstream.MsgIDHeader), schemas.ChangeMsgID(w, prev); got != want {
			return fmt.Errorf("message %d has msg id %q, want %q: it was not appended after its predecessor", m.Sequence, got, want)
		}
		var ev schemas.WorkloadChange
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return err
		}
		evs = append(evs, ev)
		prev = m.Sequence
		return nil
	})

	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestPublishChangeRecordsABA(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	w := testWorkload("u1")
	a, bb := observed(t, w, "vllm:a"), observed(t, w, "vllm:b")

	var seqs []uint64
	for i, ev := range []schemas.WorkloadChange{a, bb, a} {
		seq, published, err := b.PublishChange(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if !published {
			t.Fatalf("event %d was not published", i)
		}
		seqs = append(seqs, seq)
	}
	// The same state again publishes nothing and reports the last sequence.
	seq, published, err := b.PublishChange(ctx, a)
	if err != nil || published || seq != seqs[2] {
		t.Fatalf("repeat of the last state: seq %d published %v err %v, want seq %d, not published", seq, published, err, seqs[2])
	}
	got := history(t, b, w)
	if len(got) != 3 {
		t.Fatalf("history has %d events, want 3", len(got))
	}
	for i, want := range []string{a.Data.InputHash, bb.Data.InputHash, a.Data.InputHash} {
		if got[i].Data.InputHash != want {
			t.Errorf("event %d has input hash %s, want %s", i, got[i].Data.InputHash, want)
		}
	}
	last, lastSeq, ok, err := b.LastChange(ctx, w)
	if err != nil || !ok || lastSeq != seqs[2] || last.ID != a.ID {
		t.Fatalf("LastChange: %v seq %d ok %v err %v", last.ID, lastSeq, ok, err)
	}
	// A tombstone after A is a different state and is recorded.
	if _, published, err := b.PublishChange(ctx, schemas.NewDeleted("test", a.Time, w)); err != nil || !published {
		t.Fatalf("tombstone: published %v err %v", published, err)
	}
}

func TestLastChangeOfUnknownWorkload(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	_, seq, ok, err := b.LastChange(testContext(t), testWorkload("nobody"))
	if err != nil || ok || seq != 0 {
		t.Fatalf("got seq %d ok %v err %v, want nothing", seq, ok, err)
	}
}

func TestPublishChangeRetryIsDropped(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	w := testWorkload("u1")
	ev := observed(t, w, "vllm:a")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	// The same decision (same last sequence seen) sent twice, as a client
	// retry after a lost ack would.
	first, err := publishAt(ctx, b, ev, data, 0)
	if err != nil || first.Duplicate {
		t.Fatalf("first publish: %+v %v", first, err)
	}
	// The server refuses it either as a duplicate msg id or, checking the
	// expected sequence first (a standalone server does), as a wrong last
	// sequence; PublishChange handles both by re-reading.
	retry, err := publishAt(ctx, b, ev, data, 0)
	switch {
	case errors.Is(err, stream.ErrWrongLastSeq):
	case err != nil:
		t.Fatal(err)
	case !retry.Duplicate || retry.Seq != first.Seq:
		t.Fatalf("retry ack %+v, want a duplicate of seq %d", retry, first.Seq)
	}
	s, err := b.js.Stream(ctx, schemas.StreamChanges)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("CHANGES holds %d messages, want 1", n)
	}
	// Publishing the same state again through PublishChange reads the stored
	// event and publishes nothing.
	seq, published, err := b.PublishChange(ctx, observed(t, w, "vllm:a"))
	if err != nil || published || seq != first.Seq {
		t.Fatalf("same state after retry: seq %d published %v err %v", seq, published, err)
	}
}

func TestPublishChangeConcurrentWritersNeverInterleave(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	w := testWorkload("shared")
	const writers, perWriter = 2, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for i := range writers {
		wg.Go(func() {
			for k := range perWriter {
				ev := observed(t, w, fmt.Sprintf("vllm:w%d-%d", i, k))
				if _, published, err := b.PublishChange(ctx, ev); err != nil {
					errs <- err
				} else if !published {
					errs <- fmt.Errorf("writer %d event %d: a new state was not published", i, k)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := history(t, b, w)
	if len(got) != writers*perWriter {
		t.Fatalf("history has %d events, want %d", len(got), writers*perWriter)
	}
	seen := map[string]bool{}
	for _, ev := range got {
		if seen[ev.Data.InputHash] {
			t.Fatalf("event %s recorded twice", ev.ID)
		}
		seen[ev.Data.InputHash] = true
	}
}

func TestPublishChangeRejectsIncompleteIdentity(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ev := observed(t, testWorkload("u1"), "vllm:a")
	ev.Data.Workload.UID = ""
	if _, _, err := b.PublishChange(context.Background(), ev); err == nil {
		t.Fatal("an event without uid was published")
	}
}

// An event stored without the state headers (as written before they existed)
// is still compared by decoding it: the same state is not published again.
func TestPublishChangeComparesHeaderlessEvents(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	w := testWorkload("legacy")
	ev := observed(t, w, "vllm:a")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(ctx, schemas.ChangesSubject(w), data); err != nil {
		t.Fatal(err)
	}
	if _, pub, err := b.PublishChange(ctx, ev); err != nil || pub {
		t.Fatalf("same state published again: published=%v err=%v", pub, err)
	}
	if _, pub, err := b.PublishChange(ctx, observed(t, w, "vllm:b")); err != nil || !pub {
		t.Fatalf("new state not published: published=%v err=%v", pub, err)
	}
	m, err := b.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(w))
	if err != nil || m.Header.Get(schemas.HeaderInputHash) == "" || m.Header.Get(headerEventType) != schemas.TypeObserved {
		t.Fatalf("new event lacks state headers: %v %v", m.Header, err)
	}
}

// AppendChanges publishes without a round trip per event, and an append
// whose expectation is stale (another writer got there first) is decided
// again: nothing is lost, nothing is written twice, and a state already
// there is not appended again.
func TestAppendChanges(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	var appends []Append
	for i := range 50 {
		appends = append(appends, Append{Event: observed(t, testWorkload(fmt.Sprint("a", i)), "img:1")})
	}
	for i, r := range b.AppendChanges(ctx, appends) {
		if r.Err != nil || !r.Published || r.Seq == 0 {
			t.Fatalf("append %d: %+v", i, r)
		}
	}
	// A second writer changes a0 and a1 behind the first one's back.
	if _, _, err := b.PublishChange(ctx, observed(t, testWorkload("a0"), "img:other")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.PublishChange(ctx, observed(t, testWorkload("a1"), "img:2")); err != nil {
		t.Fatal(err)
	}
	// The first writer appends from its stale read: a0 to img:2 expecting
	// seq 1; a1 to img:2, the state the other writer already wrote.
	res := b.AppendChanges(ctx, []Append{
		{Event: observed(t, testWorkload("a0"), "img:2"), LastSeq: 1},
		{Event: observed(t, testWorkload("a1"), "img:2"), LastSeq: 2},
	})
	if r := res[0]; r.Err != nil || !r.Published {
		t.Fatalf("stale append of a new state: %+v", r)
	}
	if r := res[1]; r.Err != nil || r.Published {
		t.Fatalf("stale append of the state already there: %+v, want not published", r)
	}
	for uid, want := range map[string][]string{"a0": {"img:1", "img:other", "img:2"}, "a1": {"img:1", "img:2"}} {
		var got []string
		if err := b.Reader().Messages(ctx, schemas.StreamChanges, schemas.ChangesSubject(testWorkload(uid)), 0, func(m *jetstream.RawStreamMsg) error {
			var ev schemas.WorkloadChange
			if err := json.Unmarshal(m.Data, &ev); err != nil {
				return err
			}
			got = append(got, ev.Data.Inputs.Components[0].Containers[0].Image)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s history %v, want %v", uid, got, want)
		}
	}
}

// The name index finds a workload without reading every workload, for both
// writers (PublishChange and AppendChanges), in any case of the kind, and
// the newest incarnation of a name deleted and re-created.
func TestFindWorkloadUsesTheNameIndex(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	first := testWorkload("u-first")
	first.Name = "chat"
	if _, _, err := b.PublishChange(ctx, observed(t, first, "img:1")); err != nil {
		t.Fatal(err)
	}
	var appends []Append
	for i := range 20 {
		appends = append(appends, Append{Event: observed(t, testWorkload(fmt.Sprint("other-", i)), "img:1")})
	}
	again := first
	again.UID = "u-second"
	ev := observed(t, again, "img:2")
	ev.Time = ev.Time.Add(time.Hour)
	appends = append(appends, Append{Event: ev})
	for _, r := range b.AppendChanges(ctx, appends) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	uids, err := b.WorkloadUIDs(ctx, "dev", "ml", "deployment", "chat")
	if err != nil || strings.Join(uids, ",") != "u-first,u-second" {
		t.Fatalf("uids %v, %v", uids, err)
	}
	w, err := b.FindWorkload(ctx, "dev", "ml", "DEPLOYMENT", "chat")
	if err != nil || w.UID != "u-second" {
		t.Fatalf("found %+v, %v", w, err)
	}
	if _, err := b.FindWorkload(ctx, "dev", "ml", "Deployment", "nope"); !errors.Is(err, ErrNoWorkload) {
		t.Fatalf("unknown name: %v", err)
	}
}

// Trimming CHANGES never ages out a workload's last event. The cutoff is
// the stored time of the first recent event, so no test waits on the clock.
func TestRetentionKeepsEveryLastEvent(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	w1, w2, w3 := testWorkload("r1"), testWorkload("r2"), testWorkload("r3")
	for _, ev := range []schemas.WorkloadChange{observed(t, w1, "a:1"), observed(t, w1, "a:2"), observed(t, w2, "b:1")} {
		if _, _, err := b.PublishChange(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	// A limit of an hour: nothing is that old.
	if n, err := owner.EnforceRetention(ctx, b, b.Reader(), time.Hour, nil); n != 0 || err != nil {
		t.Fatalf("an hour's retention removed %d, %v", n, err)
	}
	seq, _, err := b.PublishChange(ctx, observed(t, w1, "a:3"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.PublishChange(ctx, observed(t, w3, "c:1")); err != nil {
		t.Fatal(err)
	}
	first, err := b.Reader().GetMsg(ctx, schemas.StreamChanges, seq)
	if err != nil {
		t.Fatal(err)
	}
	n, err := owner.TrimBefore(ctx, b, b.Reader(), first.Time)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 { // w1's a:1 and a:2; w2's only (old) event stays
		t.Fatalf("removed %d messages, want 2", n)
	}
	latest := map[string]string{}
	if err := b.LatestChanges(ctx, "dev", func(ev schemas.WorkloadChange, _ uint64) error {
		latest[ev.Data.Workload.UID] = ev.Data.Inputs.Components[0].Containers[0].Image
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if latest["r1"] != "a:3" || latest["r2"] != "b:1" || latest["r3"] != "c:1" {
		t.Fatalf("last events after retention: %v", latest)
	}
}
