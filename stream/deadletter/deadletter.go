package deadletter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Headers of a dead letter besides schemas.HeaderReason. A dead letter is
// the failed message's bytes and headers (JetStream control headers
// excepted) plus these.
const (
	// HeaderStage is the stage that gave up on the message.
	HeaderStage = "Bomstream-Dlq-Stage"
	// HeaderStream, HeaderSubject and HeaderSeq say where the failed
	// message is stored: its stream, subject and sequence (decimal).
	HeaderStream  = "Bomstream-Dlq-Stream"
	HeaderSubject = "Bomstream-Dlq-Subject"
	HeaderSeq     = "Bomstream-Dlq-Seq"
	// HeaderDelivered is how often the server had delivered it.
	HeaderDelivered = "Bomstream-Dlq-Delivered"
	// HeaderTime is when it was dead-lettered (RFC 3339).
	HeaderTime = "Bomstream-Dlq-Time"
	// HeaderMsgID keeps the failed message's Nats-Msg-Id, which cannot be
	// copied as is (the DLQ stream would deduplicate on it).
	HeaderMsgID = "Bomstream-Dlq-Msg-Id"
)

// stagePattern is a stage name: dot-separated subject tokens.
var stagePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// ValidStage reports whether stage can name a stage: its dead letters go
// to bomstream.dlq.<stage>, so it is dot-separated subject tokens.
func ValidStage(stage string) bool { return stagePattern.MatchString(stage) }

// MaxReasonBytes bounds the reason header of a dead letter.
const MaxReasonBytes = 1024

// ID is the Nats-Msg-Id of a dead letter: one per (stage, stream,
// sequence), so that a stage that dead-letters the same message twice
// (a redelivery racing the first dead letter) stores it once.
func ID(stage, streamName string, seq uint64) string {
	return stage + ":" + streamName + ":" + strconv.FormatUint(seq, 10)
}

// Store is the DLQ stream over a bus: where the stages park what they gave
// up on, and where `bomstream dlq` lists, shows, retries and removes it.
// It holds nothing but the bus, so it is cheap to pass by value and safe
// for concurrent use.
type Store struct{ bus *stream.Bus }

// New is the dead-letter store over bus.
func New(bus *stream.Bus) Store { return Store{bus} }

// Put stores d on bomstream.dlq.<d.Stage> in the one dead-letter
// format, its reason (already redacted) made a header value by Reason,
// under the message id msgID (see ID), and waits for the stream's ack.
// d.ID and d.Time are ignored: it returns the new dead letter's id, and
// it is stamped now.
func (s Store) Put(ctx context.Context, d Letter, msgID string) (uint64, error) {
	if !ValidStage(d.Stage) {
		return 0, fmt.Errorf("dead letter: stage %q is not a dot-separated subject", d.Stage)
	}
	out := nats.NewMsg(schemas.DLQSubject(d.Stage))
	out.Data = d.Data
	for k, vs := range d.Header {
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			if strings.EqualFold(k, jetstream.MsgIDHeader) && len(vs) > 0 {
				out.Header.Set(HeaderMsgID, vs[0])
			}
			continue
		}
		out.Header[k] = append([]string(nil), vs...)
	}
	out.Header.Set(schemas.HeaderReason, Reason(d.Reason))
	out.Header.Set(HeaderStage, d.Stage)
	out.Header.Set(HeaderStream, d.Stream)
	out.Header.Set(HeaderSubject, d.Subject)
	out.Header.Set(HeaderSeq, strconv.FormatUint(d.Seq, 10))
	out.Header.Set(HeaderDelivered, strconv.FormatUint(d.Delivered, 10))
	out.Header.Set(HeaderTime, time.Now().UTC().Format(time.RFC3339Nano))
	ack, err := s.bus.Writer().PublishAnyStream(ctx, out, msgID)
	if err != nil {
		return 0, fmt.Errorf("dead letter to %s: %w", out.Subject, err)
	}
	return ack.Seq, nil
}

// Letter is a message a stage gave up on, as stored on DLQ.
type Letter struct {
	// ID is its sequence on the DLQ stream.
	ID uint64
	// Stage, Stream, Subject and Seq say who gave up on which message.
	Stage, Stream, Subject string
	Seq                    uint64
	Delivered              uint64
	Reason                 string
	Time                   time.Time
	// Header and Data are the failed message's, as it was consumed (JetStream
	// control headers excepted).
	Header nats.Header
	Data   []byte
}

// parse reads a stored DLQ message.
func parse(m *jetstream.RawStreamMsg) Letter {
	h := m.Header
	d := Letter{ID: m.Sequence, Stage: h.Get(HeaderStage), Stream: h.Get(HeaderStream), Subject: h.Get(HeaderSubject),
		Reason: h.Get(schemas.HeaderReason), Data: m.Data, Header: nats.Header{}}
	if d.Stage == "" {
		d.Stage = strings.TrimPrefix(m.Subject, schemas.SubjectDLQPrefix)
	}
	d.Seq, _ = strconv.ParseUint(h.Get(HeaderSeq), 10, 64)
	d.Delivered, _ = strconv.ParseUint(h.Get(HeaderDelivered), 10, 64)
	if t, err := time.Parse(time.RFC3339Nano, h.Get(HeaderTime)); err == nil {
		d.Time = t
	} else {
		d.Time = m.Time
	}
	for k, vs := range h {
		if strings.HasPrefix(k, "Bomstream-Dlq-") {
			continue
		}
		d.Header[k] = vs
	}
	if id := h.Get(HeaderMsgID); id != "" {
		d.Header.Set(jetstream.MsgIDHeader, id)
	}
	return d
}

// List calls fn for every dead letter of stage ("" means every
// stage; "sink.*" every sink) in the order they were stored.
func (s Store) List(ctx context.Context, stage string, fn func(Letter) error) error {
	filter := schemas.SubjectDLQPrefix + ">"
	if stage != "" {
		filter = schemas.DLQSubject(stage)
	}
	return s.bus.Reader().Messages(ctx, schemas.StreamDLQ, filter, 0, func(m *jetstream.RawStreamMsg) error {
		return fn(parse(m))
	})
}

// ErrNotFound is returned for a DLQ id that holds nothing.
var ErrNotFound = errors.New("no such dead letter")

// Get reads one dead letter by its id (its DLQ sequence).
func (s Store) Get(ctx context.Context, id uint64) (Letter, error) {
	m, err := s.bus.Reader().GetMsg(ctx, schemas.StreamDLQ, id)
	if err != nil {
		return Letter{}, fmt.Errorf("dead letter %d: %w", id, err)
	}
	if m == nil {
		return Letter{}, fmt.Errorf("dead letter %d: %w", id, ErrNotFound)
	}
	return parse(m), nil
}

// codeSequenceNotFound is the server's answer to the deletion of a
// message it does not hold.
const codeSequenceNotFound = 10043

// Remove deletes a dead letter once it was dealt with.
func (s Store) Remove(ctx context.Context, id uint64) error {
	dlq, err := s.bus.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		return err
	}
	// Repeatable: a deletion stored at the first attempt makes the
	// retry's "not found", which is no error.
	err = s.bus.Retry(ctx, true, func(ctx context.Context) error { return dlq.DeleteMsg(ctx, id) })
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) && stream.APIErrorCode(err) != codeSequenceNotFound {
		return fmt.Errorf("remove dead letter %d: %w", id, err)
	}
	return nil
}

// Reason makes an error text fit a header value: one line (CR, LF and other
// control characters become spaces), valid UTF-8, at most MaxReasonBytes.
func Reason(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= MaxReasonBytes {
		return s
	}
	const ellipsis = "..."
	cut := MaxReasonBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
