package changelog

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Append is one event for AppendChanges: ev, expected to follow the message
// at LastSeq in its workload's history (0: the workload has none), as the
// caller read the stream (LatestChanges).
type Append struct {
	Event   schemas.WorkloadChange
	LastSeq uint64
}

// AppendResult is the outcome of one Append.
type AppendResult struct {
	Seq       uint64 // the workload's last sequence after the call
	Published bool   // the event was appended (its ack arrived)
	Err       error
}

// maxPendingAppends bounds the conditional publishes AppendChanges has sent
// and not yet seen acknowledged.
const maxPendingAppends = 1024

// pendingAppend is a conditional publish of appends[i] sent and not settled.
type pendingAppend struct {
	i int
	f jetstream.PubAckFuture
}

// AppendChanges appends many events, each with PublishChange's optimistic
// concurrency, without a round trip per event: the conditional publishes
// (Nats-Msg-Id ChangeMsgID(w, LastSeq), Nats-Expected-Last-Subject-Sequence
// LastSeq) go out without waiting, up to maxPendingAppends at a time, and
// their acks are collected after. An event counts as published only when its
// ack arrived. One whose expectation failed (another writer appended first,
// or the caller's read was stale) goes through PublishChange, which reads
// the history again and decides again: a "same state, nothing to publish"
// decision is never taken from the caller's read alone. Events of one
// workload must not appear twice in appends.
func (l *Log) AppendChanges(ctx context.Context, appends []Append) []AppendResult {
	out := make([]AppendResult, len(appends))
	var window []pendingAppend
	var retry, fresh []int
	settle := func(p pendingAppend) {
		select {
		case ack := <-p.f.Ok():
			if ack.Duplicate {
				retry = append(retry, p.i) // our id was taken: decide again
				return
			}
			out[p.i] = AppendResult{Seq: ack.Sequence, Published: true}
			if appends[p.i].LastSeq == 0 {
				fresh = append(fresh, p.i)
			}
		case err := <-p.f.Err():
			if !stream.IsWrongLastSeq(err) && !stream.Transient(err) {
				w := appends[p.i].Event.Data.Workload
				out[p.i] = AppendResult{Err: fmt.Errorf("publish change %s: %w", w, err)}
				return
			}
			retry = append(retry, p.i) // stale, or unanswered: PublishChange reads and decides again
		case <-ctx.Done():
			out[p.i] = AppendResult{Err: fmt.Errorf("publish change %s: %w", appends[p.i].Event.Data.Workload, ctx.Err())}
		}
	}
	for i, a := range appends {
		f, sent, err := l.appendAsync(a)
		switch {
		case err != nil:
			out[i] = AppendResult{Err: err}
			continue
		case !sent:
			retry = append(retry, i)
			continue
		}
		window = append(window, pendingAppend{i, f})
		if len(window) >= maxPendingAppends {
			for _, p := range window[:len(window)/2] {
				settle(p)
			}
			window = append(window[:0], window[len(window)/2:]...)
		}
	}
	for _, p := range window {
		settle(p)
	}
	for _, i := range retry {
		seq, pub, err := l.PublishChange(ctx, appends[i].Event)
		out[i] = AppendResult{Seq: seq, Published: pub, Err: err}
	}
	if err := l.indexNames(ctx, appends, fresh); err != nil {
		for _, i := range fresh {
			out[i].Err = err
		}
	}
	return out
}

// appendAsync sends a's conditional publish without waiting for its ack;
// sent is false when it could not even be sent (the event then goes
// through PublishChange instead).
func (l *Log) appendAsync(a Append) (f jetstream.PubAckFuture, sent bool, err error) {
	w := a.Event.Data.Workload
	data, err := encode(a.Event)
	if err != nil {
		return nil, false, fmt.Errorf("publish change %s: %w", w, err)
	}
	f, err = l.bus.Writer().PublishAsync(changeMsg(a.Event, data, nil),
		jetstream.WithMsgID(schemas.ChangeMsgID(w, a.LastSeq)),
		jetstream.WithExpectLastSequencePerSubject(a.LastSeq),
		jetstream.WithExpectStream(schemas.StreamChanges),
	)
	return f, err == nil, nil
}

// indexNames records in the name index the workloads of appends[i] for i
// in fresh (their first event), with publishes that do not wait one by one.
func (l *Log) indexNames(ctx context.Context, appends []Append, fresh []int) error {
	if len(fresh) == 0 {
		return nil
	}
	if _, err := l.nameIndex(ctx); err != nil {
		return err
	}
	var futures []jetstream.PubAckFuture
	for _, i := range fresh {
		ev := appends[i].Event
		m := &nats.Msg{Subject: "$KV." + stream.NameIndexBucket + "." + nameKey(ev.Data.Workload), Data: []byte(ev.Time.UTC().Format(time.RFC3339Nano))}
		f, err := l.bus.Writer().PublishAsync(m)
		if err != nil {
			return fmt.Errorf("name index: %w", err)
		}
		futures = append(futures, f)
	}
	for k, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if !stream.Transient(err) {
				return fmt.Errorf("name index: %w", err)
			}
			if err := l.indexName(ctx, appends[fresh[k]].Event); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("name index: %w", ctx.Err())
		}
	}
	return nil
}
