package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// maxPublishAttempts bounds how often PublishChange re-reads a workload's
// history after losing a race to another writer.
const maxPublishAttempts = 10

// ErrConflict is returned by PublishChange when other writers kept changing the
// workload's history for every attempt it made.
var ErrConflict = errors.New("workload history kept changing under the publisher")

// PublishChange appends ev to its workload's history on CHANGES with
// optimistic concurrency (docs/ARCHITECTURE.md, Streams):
//
//  1. read the last message of the workload's subject (sequence n, 0 when none);
//  2. when that event has the same Type and InputHash as ev, publish nothing:
//     the history already ends in this state (published is false, seq is n);
//  3. otherwise publish json.Marshal(ev) with Nats-Msg-Id ChangeMsgID(w, n) and
//     Nats-Expected-Last-Subject-Sequence n.
//
// When another writer got there first (a wrong-last-sequence error, or a
// duplicate ack for the same msg id) it goes back to 1 and decides again, at
// most a few times before returning ErrConflict. A retried publish of the same
// decision is therefore dropped by the server, two writers never interleave
// one workload's history, and A -> B -> A is recorded three times.
//
// seq is the stream sequence of the workload's last event after the call. It
// is safe for concurrent use.
func (b *Bus) PublishChange(ctx context.Context, ev schemas.WorkloadChange) (seq uint64, published bool, err error) {
	w := ev.Data.Workload
	if w.Cluster == "" || w.UID == "" {
		return 0, false, fmt.Errorf("publish change %s: workload has no cluster or uid", w)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return 0, false, fmt.Errorf("publish change %s: %w", w, err)
	}
	// uncertain: an attempt of ours may have been stored (a retry after a
	// timeout was answered as a duplicate or as a wrong last sequence); a
	// history found ending in our state then counts as our publish, so that
	// the caller hears it was published and the name index gets it (a put
	// that is harmless twice).
	uncertain, firstSeen := false, uint64(0)
	for n := range maxPublishAttempts {
		m, err := b.lastChangeMsg(ctx, w)
		if err != nil {
			return 0, false, fmt.Errorf("publish change %s: %w", w, err)
		}
		var lastSeq uint64
		if m != nil {
			lastSeq = m.Sequence
			if sameState(m, ev) {
				if uncertain && firstSeen == 0 {
					err = b.indexName(ctx, ev)
				}
				if err != nil {
					return lastSeq, true, fmt.Errorf("publish change %s: %w", w, err)
				}
				return lastSeq, uncertain, nil
			}
		}
		if n == 0 {
			firstSeen = lastSeq
		}
		ack, err := b.publishChangeAt(ctx, w, ev.Type, ev.Data.InputHash, data, lastSeq)
		switch {
		case isWrongLastSeq(err):
			// Another writer appended first, or an attempt of ours that
			// timed out was stored and its retry is checked against it:
			// decide again.
			uncertain = true
			continue
		case err != nil:
			return 0, false, fmt.Errorf("publish change %s: %w", w, err)
		case ack.Duplicate:
			uncertain = true // our msg id was taken by our own retry, or another writer: decide again
			continue
		}
		if lastSeq == 0 {
			if err := b.indexName(ctx, ev); err != nil {
				return ack.Seq, true, fmt.Errorf("publish change %s: %w", w, err)
			}
		}
		return ack.Seq, true, nil
	}
	return 0, false, fmt.Errorf("publish change %s: %w", w, ErrConflict)
}

// publishChangeAt is one conditional append: it succeeds only when the
// subject's last sequence is still lastSeq.
func (b *Bus) publishChangeAt(ctx context.Context, w schemas.Workload, typ, inputHash string, data []byte, lastSeq uint64) (PubAck, error) {
	msg := &nats.Msg{Subject: schemas.ChangesSubject(w), Data: data, Header: nats.Header{}}
	msg.Header.Set(headerEventType, typ)
	if inputHash != "" {
		msg.Header.Set(schemas.HeaderInputHash, inputHash)
	}
	setPublishHeaders(msg, schemas.StreamChanges, schemas.ChangeMsgID(w, lastSeq))
	expectLastSubjectSeq(msg, lastSeq)
	return b.publishMsg(ctx, msg, true)
}

// AppendChangeAfter appends ev to its workload's history only while the
// subject's last sequence is still lastSeq, with Nats-Msg-Id
// ChangeMsgID(w, lastSeq) and the headers PublishChange sets, plus extra.
// Unlike PublishChange it appends even when the history already ends in
// ev's state: a re-render repeats the last event on purpose. The error
// wraps ErrWrongLastSeq when another writer appended first; a duplicate
// ack (the id was taken) says the same: read again and decide again.
func (b *Bus) AppendChangeAfter(ctx context.Context, ev schemas.WorkloadChange, lastSeq uint64, extra nats.Header) (PubAck, error) {
	w := ev.Data.Workload
	if w.Cluster == "" || w.UID == "" {
		return PubAck{}, fmt.Errorf("append change %s: workload has no cluster or uid", w)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return PubAck{}, fmt.Errorf("append change %s: %w", w, err)
	}
	msg := &nats.Msg{Subject: schemas.ChangesSubject(w), Data: data, Header: nats.Header{}}
	for k, v := range extra {
		msg.Header[k] = v
	}
	msg.Header.Set(headerEventType, ev.Type)
	if ev.Data.InputHash != "" {
		msg.Header.Set(schemas.HeaderInputHash, ev.Data.InputHash)
	}
	ack, err := b.Writer().PublishAfter(ctx, msg, schemas.ChangeMsgID(w, lastSeq), lastSeq)
	if err != nil {
		return ack, fmt.Errorf("append change %s: %w", w, err)
	}
	return ack, nil
}

// LastChange returns the last event of the workload's history and its stream
// sequence; ok is false when the workload has none.
// An unreadable last event is an error that still reports its sequence.
func (b *Bus) LastChange(ctx context.Context, w schemas.Workload) (ev schemas.WorkloadChange, seq uint64, ok bool, err error) {
	m, err := b.lastChangeMsg(ctx, w)
	if err != nil {
		return ev, 0, false, fmt.Errorf("last change of %s: %w", w, err)
	}
	if m == nil {
		return ev, 0, false, nil
	}
	if ev, err = DecodeChange(m.Data); err != nil {
		return ev, m.Sequence, false, fmt.Errorf("last change of %s at seq %d: %w", w, m.Sequence, err)
	}
	return ev, m.Sequence, true, nil
}

// headerEventType carries the CloudEvents type of a CHANGES message, so that
// PublishChange compares states from the headers without decoding the event.
const headerEventType = "Bomstream-Event-Type"

// sameState reports whether the stored message m already says what ev says:
// the same event type and the same input hash. Messages written before these
// headers existed are decoded; an unreadable one counts as different, so the
// new event is appended after it.
func sameState(m *jetstream.RawStreamMsg, ev schemas.WorkloadChange) bool {
	if typ := m.Header.Get(headerEventType); typ != "" {
		return typ == ev.Type && m.Header.Get(schemas.HeaderInputHash) == ev.Data.InputHash
	}
	var last schemas.WorkloadChange
	return json.Unmarshal(m.Data, &last) == nil && last.Type == ev.Type && last.Data.InputHash == ev.Data.InputHash
}

// lastChangeMsg is the last stored message of the workload's subject, nil when none.
func (b *Bus) lastChangeMsg(ctx context.Context, w schemas.Workload) (*jetstream.RawStreamMsg, error) {
	s, err := b.Stream(ctx, schemas.StreamChanges)
	if err != nil {
		return nil, err
	}
	var m *jetstream.RawStreamMsg
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		m, err = s.GetLastMsgForSubject(ctx, schemas.ChangesSubject(w))
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

func isWrongLastSeq(err error) bool {
	if err == nil {
		return false // without the allocation errors.As makes of apiErr
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

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
func (b *Bus) AppendChanges(ctx context.Context, appends []Append) []AppendResult {
	out := make([]AppendResult, len(appends))
	type pending struct {
		i int
		f jetstream.PubAckFuture
	}
	var window []pending
	var retry, fresh []int
	settle := func(p pending) {
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
			if !isWrongLastSeq(err) && !transient(err, true) {
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
		f, err := b.appendAsync(a)
		if errors.Is(err, errNotSent) {
			retry = append(retry, i)
			continue
		}
		if err != nil {
			out[i] = AppendResult{Err: err}
			continue
		}
		window = append(window, pending{i, f})
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
		seq, pub, err := b.PublishChange(ctx, appends[i].Event)
		out[i] = AppendResult{Seq: seq, Published: pub, Err: err}
	}
	if err := b.indexNames(ctx, appends, fresh); err != nil {
		for _, i := range fresh {
			out[i].Err = err
		}
	}
	return out
}

// errNotSent: an asynchronous publish could not even be sent; the event
// goes through PublishChange instead.
var errNotSent = errors.New("not sent")

// appendAsync sends a's conditional publish without waiting for its ack.
func (b *Bus) appendAsync(a Append) (jetstream.PubAckFuture, error) {
	ev := a.Event
	w := ev.Data.Workload
	if w.Cluster == "" || w.UID == "" {
		return nil, fmt.Errorf("publish change %s: workload has no cluster or uid", w)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("publish change %s: %w", w, err)
	}
	msg := &nats.Msg{Subject: schemas.ChangesSubject(w), Data: data, Header: nats.Header{}}
	msg.Header.Set(headerEventType, ev.Type)
	if ev.Data.InputHash != "" {
		msg.Header.Set(schemas.HeaderInputHash, ev.Data.InputHash)
	}
	f, err := b.js.PublishMsgAsync(msg,
		jetstream.WithMsgID(schemas.ChangeMsgID(w, a.LastSeq)),
		jetstream.WithExpectLastSequencePerSubject(a.LastSeq),
		jetstream.WithExpectStream(schemas.StreamChanges),
	)
	if err != nil {
		return nil, errNotSent
	}
	return f, nil
}

// indexNames records in the name index the workloads of appends[i] for i
// in fresh (their first event), with publishes that do not wait one by one.
func (b *Bus) indexNames(ctx context.Context, appends []Append, fresh []int) error {
	if len(fresh) == 0 {
		return nil
	}
	if _, err := b.names(ctx); err != nil {
		return err
	}
	var futures []jetstream.PubAckFuture
	for _, i := range fresh {
		ev := appends[i].Event
		f, err := b.js.PublishAsync("$KV."+namesBucket+"."+nameKey(ev.Data.Workload), []byte(ev.Time.UTC().Format(time.RFC3339Nano)))
		if err != nil {
			return fmt.Errorf("name index: %w", err)
		}
		futures = append(futures, f)
	}
	for k, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if !transient(err, true) {
				return fmt.Errorf("name index: %w", err)
			}
			if err := b.indexName(ctx, appends[fresh[k]].Event); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("name index: %w", ctx.Err())
		}
	}
	return nil
}
