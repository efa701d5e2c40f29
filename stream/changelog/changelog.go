package changelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Log is the change log over a bus: each workload's history on CHANGES and
// the name index beside it. It is safe for concurrent use; make one per
// process part and keep it, since it keeps the name index's handle.
type Log struct {
	bus *stream.Bus

	mu    sync.Mutex
	names jetstream.KeyValue // the name index, once opened
}

// New is the change log over bus.
func New(bus *stream.Bus) *Log { return &Log{bus: bus} }

// maxPublishAttempts bounds how often PublishChange re-reads a workload's
// history after losing a race to another writer.
const maxPublishAttempts = 10

// ErrConflict is returned by PublishChange when other writers kept changing the
// workload's history for every attempt it made.
var ErrConflict = errors.New("workload history kept changing under the publisher")

// headerEventType carries the CloudEvents type of a CHANGES message, so that
// PublishChange compares states from the headers without decoding the event.
const headerEventType = "Bomstream-Event-Type"

// Decode reads a CHANGES message body. It is the encoding/json/v2
// decoder (about twice as fast as encoding/json's on events, and strict:
// field names match exactly, duplicate names and invalid UTF-8 are errors),
// which every reader of CHANGES shares. Encoding stays with encoding/json:
// the input hash is defined on its output.
func Decode(data []byte) (schemas.WorkloadChange, error) {
	var ev schemas.WorkloadChange
	err := jsonv2.Unmarshal(data, &ev)
	return ev, err
}

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
// one workload's history, and A -> B -> A is recorded three times. A
// workload's first event also enters the name index.
//
// seq is the stream sequence of the workload's last event after the call. It
// is safe for concurrent use.
func (l *Log) PublishChange(ctx context.Context, ev schemas.WorkloadChange) (seq uint64, published bool, err error) {
	w := ev.Data.Workload
	data, err := encode(ev)
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
		m, err := l.bus.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(w))
		if err != nil {
			return 0, false, fmt.Errorf("publish change %s: %w", w, err)
		}
		var lastSeq uint64
		if m != nil {
			lastSeq = m.Sequence
			if sameState(m, ev) {
				if uncertain && firstSeen == 0 {
					err = l.indexName(ctx, ev)
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
		ack, err := l.bus.Writer().PublishAfter(ctx, changeMsg(ev, data, nil), schemas.ChangeMsgID(w, lastSeq), lastSeq)
		switch {
		case errors.Is(err, stream.ErrWrongLastSeq):
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
			if err := l.indexName(ctx, ev); err != nil {
				return ack.Seq, true, fmt.Errorf("publish change %s: %w", w, err)
			}
		}
		return ack.Seq, true, nil
	}
	return 0, false, fmt.Errorf("publish change %s: %w", w, ErrConflict)
}

// encode is ev's CHANGES body, once its workload is known to have a subject.
func encode(ev schemas.WorkloadChange) ([]byte, error) {
	if w := ev.Data.Workload; w.Cluster == "" || w.UID == "" {
		return nil, errors.New("workload has no cluster or uid")
	}
	return json.Marshal(ev)
}

// changeMsg is ev's CHANGES message: its body data, extra headers, and the
// event type and input hash PublishChange compares states by.
func changeMsg(ev schemas.WorkloadChange, data []byte, extra nats.Header) *nats.Msg {
	msg := &nats.Msg{Subject: schemas.ChangesSubject(ev.Data.Workload), Data: data, Header: nats.Header{}}
	maps.Copy(msg.Header, extra)
	msg.Header.Set(headerEventType, ev.Type)
	if ev.Data.InputHash != "" {
		msg.Header.Set(schemas.HeaderInputHash, ev.Data.InputHash)
	}
	return msg
}

// AppendChangeAfter appends ev to its workload's history only while the
// subject's last sequence is still lastSeq, with Nats-Msg-Id
// ChangeMsgID(w, lastSeq) and the headers PublishChange sets, plus extra.
// Unlike PublishChange it appends even when the history already ends in
// ev's state: a re-render repeats the last event on purpose. The error
// wraps stream.ErrWrongLastSeq when another writer appended first; a
// duplicate ack (the id was taken) says the same: read again and decide
// again.
func (l *Log) AppendChangeAfter(ctx context.Context, ev schemas.WorkloadChange, lastSeq uint64, extra nats.Header) (stream.PubAck, error) {
	w := ev.Data.Workload
	data, err := encode(ev)
	if err != nil {
		return stream.PubAck{}, fmt.Errorf("append change %s: %w", w, err)
	}
	ack, err := l.bus.Writer().PublishAfter(ctx, changeMsg(ev, data, extra), schemas.ChangeMsgID(w, lastSeq), lastSeq)
	if err != nil {
		return ack, fmt.Errorf("append change %s: %w", w, err)
	}
	return ack, nil
}

// LastChange returns the last event of the workload's history and its stream
// sequence; ok is false when the workload has none.
// An unreadable last event is an error that still reports its sequence.
func (l *Log) LastChange(ctx context.Context, w schemas.Workload) (ev schemas.WorkloadChange, seq uint64, ok bool, err error) {
	m, err := l.bus.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(w))
	if err != nil {
		return ev, 0, false, fmt.Errorf("last change of %s: %w", w, err)
	}
	if m == nil {
		return ev, 0, false, nil
	}
	if ev, err = Decode(m.Data); err != nil {
		return ev, m.Sequence, false, fmt.Errorf("last change of %s at seq %d: %w", w, m.Sequence, err)
	}
	return ev, m.Sequence, true, nil
}

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

// LatestChanges calls fn with the last event of every workload of cluster on
// CHANGES (its current state: an observation or a tombstone) and the event's
// stream sequence. It reads through an ordered consumer that delivers the last
// message per subject, and stops when that consumer has nothing left. An unreadable
// event is reported as an error naming its sequence, after the others.
func (l *Log) LatestChanges(ctx context.Context, cluster string, fn func(ev schemas.WorkloadChange, seq uint64) error) error {
	var bad []error
	err := l.bus.Reader().LastPerSubject(ctx, schemas.StreamChanges, schemas.SubjectChangesPrefix+cluster+".>", false, func(m *jetstream.RawStreamMsg) error {
		ev, err := Decode(m.Data)
		if err != nil {
			bad = append(bad, fmt.Errorf("CHANGES seq %d: %w", m.Sequence, err))
			return nil
		}
		return fn(ev, m.Sequence)
	})
	if err != nil {
		return fmt.Errorf("latest changes of %s: %w", cluster, err)
	}
	return errors.Join(bad...)
}
