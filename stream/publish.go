package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// PubAck is what a stream answered to a publish.
type PubAck struct {
	Seq       uint64 // the message's sequence on its stream
	Duplicate bool   // the stream already held a message with the same id
}

// Writer publishes to the streams: with a message id, on the condition
// of a subject's last sequence, or without waiting for the ack. It holds
// nothing but the bus, so it is cheap to pass by value and safe for
// concurrent use.
type Writer struct{ b *Bus }

// Writer hands out the bus's publishes.
func (b *Bus) Writer() Writer { return Writer{b} }

// Publish stores m on the bomstream stream its subject belongs to, with
// Nats-Msg-Id msgID (none when empty), and waits for the stream's ack. A
// retried publish with the same id within the duplicate window is stored
// once (Duplicate says so).
func (w Writer) Publish(ctx context.Context, m *nats.Msg, msgID string) (PubAck, error) {
	b := w.b
	name, err := streamOf(m.Subject)
	if err != nil {
		return PubAck{}, err
	}
	setPublishHeaders(m, name, msgID)
	ack, err := b.publishMsg(ctx, m, msgID != "")
	if err != nil {
		return PubAck{}, fmt.Errorf("publish to %s: %w", m.Subject, err)
	}
	return ack, nil
}

// PublishAnyStream is Publish without the expected-stream header: whichever
// stream takes m's subject stores it. Dead letters go this way, as they
// always have. Being retried as a repeatable request, m should carry a
// msgID. The error is the request's, unwrapped.
func (w Writer) PublishAnyStream(ctx context.Context, m *nats.Msg, msgID string) (PubAck, error) {
	setPublishHeaders(m, "", msgID)
	return w.b.publishMsg(ctx, m, true)
}

// setPublishHeaders sets the headers of a publish: the stream expected
// and the message id, each unless empty; what jetstream's WithExpectStream
// and WithMsgID set.
func setPublishHeaders(m *nats.Msg, stream, msgID string) {
	setHeader(m, jetstream.ExpectedStreamHeader, stream)
	setHeader(m, jetstream.MsgIDHeader, msgID)
}

// expectLastSubjectSeq makes m's publish conditional: stored only while
// its subject's last sequence is lastSeq (what jetstream's
// WithExpectLastSequencePerSubject sets).
func expectLastSubjectSeq(m *nats.Msg, lastSeq uint64) {
	setHeader(m, jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(lastSeq, 10))
}

// setHeader sets m's header key to v, unless v is empty.
func setHeader(m *nats.Msg, key, v string) {
	if v == "" {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header[key] = []string{v}
}

// publishMsg publishes m and waits for its ack, retrying through a leader
// election or a reconnect (see retry); repeatable says that sending m
// twice is harmless (it carries a Nats-Msg-Id, so that a stored first
// attempt makes the retry a duplicate, or a condition it then fails).
func (b *Bus) publishMsg(ctx context.Context, m *nats.Msg, repeatable bool) (PubAck, error) {
	var ack PubAck
	err := b.retry(ctx, m.Subject, repeatable, func(ctx context.Context) (err error) {
		ack, err = b.request(ctx, m)
		return err
	})
	return ack, err
}

// request sends m to its stream and reads the stream's answer: what
// jetstream's PublishMsg does, without its own retries (retry does them)
// and, for the usual answer, without a JSON decoder. Errors are the ones
// it returns: nats.ErrNoResponders, a *jetstream.APIError, or
// jetstream.ErrInvalidJSAck.
func (b *Bus) request(ctx context.Context, m *nats.Msg) (PubAck, error) {
	resp, err := b.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return PubAck{}, err
	}
	return parsePubAck(resp.Data)
}

// parsePubAck reads a stream's answer to a publish. The server writes a
// stored message's ack from a template, {"stream":"S","seq":N} (with a
// "domain" after the stream in a JetStream domain), and a duplicate's as
// JSON with "duplicate":true after the sequence: those are read by hand,
// anything else through the JSON decoder.
func parsePubAck(data []byte) (PubAck, error) {
	if ack, ok := scanPubAck(data); ok {
		return ack, nil
	}
	var r struct {
		Error     *jetstream.APIError `json:"error"`
		Stream    string              `json:"stream"`
		Seq       uint64              `json:"seq"`
		Duplicate bool                `json:"duplicate"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return PubAck{}, jetstream.ErrInvalidJSAck
	}
	if r.Error != nil {
		return PubAck{}, fmt.Errorf("nats: %w", r.Error)
	}
	if r.Stream == "" {
		return PubAck{}, jetstream.ErrInvalidJSAck
	}
	return PubAck{Seq: r.Seq, Duplicate: r.Duplicate}, nil
}

// scanPubAck reads the acks of parsePubAck's usual shapes; ok is false
// for any other.
func scanPubAck(data []byte) (ack PubAck, ok bool) {
	rest, ok := skipQuotedField(data, `{"stream":`)
	if !ok {
		return ack, false
	}
	if r, ok := skipQuotedField(rest, `,"domain":`); ok {
		rest = r
	}
	rest, ok = bytes.CutPrefix(rest, []byte(`,"seq":`))
	if !ok {
		return ack, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	seq, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil || seq == 0 {
		return ack, false
	}
	switch string(rest[n:]) {
	case "}":
		return PubAck{Seq: seq}, true
	case `,"duplicate":true}`:
		return PubAck{Seq: seq, Duplicate: true}, true
	}
	return ack, false
}

// skipQuotedField skips prefix and the non-empty JSON string after it,
// when that string has no escapes (stream names and domains cannot).
func skipQuotedField(data []byte, prefix string) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(prefix))
	if !ok || len(rest) < 3 || rest[0] != '"' {
		return data, false
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end <= 0 || bytes.IndexByte(rest[1:1+end], '\\') >= 0 {
		return data, false
	}
	return rest[end+2:], true
}

// PublishAsync sends m without waiting for its stream's ack, with the
// publish options opts (a message id, an expected stream or last subject
// sequence): the future settles later. Nothing is retried: the caller
// settles the future and tries again what failed for a reason Transient
// or IsWrongLastSeq names. An error means m could not even be sent.
func (w Writer) PublishAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	return w.b.js.PublishMsgAsync(m, opts...)
}

// ErrWrongLastSeq is returned by PublishAfter when the subject's last
// sequence is no longer the one the writer saw: another writer appended
// first; read again and decide again.
var ErrWrongLastSeq = errors.New("the subject changed since it was read")

// IsWrongLastSeq reports whether err is the server's answer to a
// conditional publish or KV update whose expected last sequence was no
// longer the subject's: another writer got there first.
func IsWrongLastSeq(err error) bool {
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

// PublishAfter is Publish with optimistic concurrency: m is stored only
// while its subject's last sequence is still lastSeq (0: the subject has
// no message), else the error wraps ErrWrongLastSeq. Being conditional,
// it is retried through an election or a timeout even without a msgID: a
// first attempt that was stored makes the retry fail with
// ErrWrongLastSeq, and the writer reads again.
func (w Writer) PublishAfter(ctx context.Context, m *nats.Msg, msgID string, lastSeq uint64) (PubAck, error) {
	b := w.b
	name, err := streamOf(m.Subject)
	if err != nil {
		return PubAck{}, err
	}
	setPublishHeaders(m, name, msgID)
	expectLastSubjectSeq(m, lastSeq)
	ack, err := b.publishMsg(ctx, m, true)
	if IsWrongLastSeq(err) {
		return PubAck{}, fmt.Errorf("publish to %s after seq %d: %w", m.Subject, lastSeq, ErrWrongLastSeq)
	}
	if err != nil {
		return PubAck{}, fmt.Errorf("publish to %s: %w", m.Subject, err)
	}
	return ack, nil
}

// streamOf names the stream that stores subject.
func streamOf(subject string) (string, error) {
	switch {
	case strings.HasPrefix(subject, schemas.SubjectChangesPrefix):
		return schemas.StreamChanges, nil
	case strings.HasPrefix(subject, schemas.SubjectBOMsPrefix):
		return schemas.StreamBOMs, nil
	case strings.HasPrefix(subject, schemas.SubjectDLQPrefix):
		return schemas.StreamDLQ, nil
	case strings.HasPrefix(subject, schemas.SubjectFindingsPrefix), strings.HasPrefix(subject, schemas.SubjectFindingSetPrefix):
		return schemas.StreamFindings, nil
	}
	return "", fmt.Errorf("publish to %s: not a bomstream subject", subject)
}
