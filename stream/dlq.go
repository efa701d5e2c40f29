package stream

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
)

// Headers of a dead letter besides schemas.HeaderReason. A dead letter is
// the failed message's bytes and headers (JetStream control headers
// excepted) plus these.
const (
	// HeaderDLQStage is the stage that gave up on the message.
	HeaderDLQStage = "Bomstream-Dlq-Stage"
	// HeaderDLQStream, HeaderDLQSubject and HeaderDLQSeq say where the failed
	// message is stored: its stream, subject and sequence (decimal).
	HeaderDLQStream  = "Bomstream-Dlq-Stream"
	HeaderDLQSubject = "Bomstream-Dlq-Subject"
	HeaderDLQSeq     = "Bomstream-Dlq-Seq"
	// HeaderDLQDelivered is how often the server had delivered it.
	HeaderDLQDelivered = "Bomstream-Dlq-Delivered"
	// HeaderDLQTime is when it was dead-lettered (RFC 3339).
	HeaderDLQTime = "Bomstream-Dlq-Time"
	// HeaderDLQMsgID keeps the failed message's Nats-Msg-Id, which cannot be
	// copied as is (the DLQ stream would deduplicate on it).
	HeaderDLQMsgID = "Bomstream-Dlq-Msg-Id"
)

// stagePattern is a stage name: dot-separated subject tokens.
var stagePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// ValidStage reports whether stage can name a stage: its dead letters go
// to bomstream.dlq.<stage>, so it is dot-separated subject tokens.
func ValidStage(stage string) bool { return stagePattern.MatchString(stage) }

// MaxReasonBytes bounds the reason header of a dead letter.
const MaxReasonBytes = 1024

// DeadLetterID is the Nats-Msg-Id of a dead letter: one per (stage, stream,
// sequence), so that a stage that dead-letters the same message twice
// (a redelivery racing the first dead letter) stores it once.
func DeadLetterID(stage, streamName string, seq uint64) string {
	return stage + ":" + streamName + ":" + strconv.FormatUint(seq, 10)
}

// PutDeadLetter stores d on bomstream.dlq.<d.Stage> in the one dead-letter
// format, its reason (already redacted) made a header value by Reason,
// under the message id msgID (see DeadLetterID), and waits for the
// stream's ack. d.ID and d.Time are ignored: it returns the new dead
// letter's id, and it is stamped now.
func (b *Bus) PutDeadLetter(ctx context.Context, d DeadLetter, msgID string) (uint64, error) {
	if !ValidStage(d.Stage) {
		return 0, fmt.Errorf("dead letter: stage %q is not a dot-separated subject", d.Stage)
	}
	out := nats.NewMsg(schemas.DLQSubject(d.Stage))
	out.Data = d.Data
	for k, vs := range d.Header {
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			if strings.EqualFold(k, jetstream.MsgIDHeader) && len(vs) > 0 {
				out.Header.Set(HeaderDLQMsgID, vs[0])
			}
			continue
		}
		out.Header[k] = append([]string(nil), vs...)
	}
	out.Header.Set(schemas.HeaderReason, Reason(d.Reason))
	out.Header.Set(HeaderDLQStage, d.Stage)
	out.Header.Set(HeaderDLQStream, d.Stream)
	out.Header.Set(HeaderDLQSubject, d.Subject)
	out.Header.Set(HeaderDLQSeq, strconv.FormatUint(d.Seq, 10))
	out.Header.Set(HeaderDLQDelivered, strconv.FormatUint(d.Delivered, 10))
	out.Header.Set(HeaderDLQTime, time.Now().UTC().Format(time.RFC3339Nano))
	setPublishHeaders(out, "", msgID)
	ack, err := b.publishMsg(ctx, out, true)
	if err != nil {
		return 0, fmt.Errorf("dead letter to %s: %w", out.Subject, err)
	}
	return ack.Seq, nil
}

// DeadLetter is a message a stage gave up on, as stored on DLQ.
type DeadLetter struct {
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

// parseDeadLetter reads a stored DLQ message.
func parseDeadLetter(m *jetstream.RawStreamMsg) DeadLetter {
	h := m.Header
	d := DeadLetter{ID: m.Sequence, Stage: h.Get(HeaderDLQStage), Stream: h.Get(HeaderDLQStream), Subject: h.Get(HeaderDLQSubject),
		Reason: h.Get(schemas.HeaderReason), Data: m.Data, Header: nats.Header{}}
	if d.Stage == "" {
		d.Stage = strings.TrimPrefix(m.Subject, schemas.SubjectDLQPrefix)
	}
	d.Seq, _ = strconv.ParseUint(h.Get(HeaderDLQSeq), 10, 64)
	d.Delivered, _ = strconv.ParseUint(h.Get(HeaderDLQDelivered), 10, 64)
	if t, err := time.Parse(time.RFC3339Nano, h.Get(HeaderDLQTime)); err == nil {
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
	if id := h.Get(HeaderDLQMsgID); id != "" {
		d.Header.Set(jetstream.MsgIDHeader, id)
	}
	return d
}

// DeadLetters calls fn for every dead letter of stage ("" means every
// stage; "sink.*" every sink) in the order they were stored.
func (b *Bus) DeadLetters(ctx context.Context, stage string, fn func(DeadLetter) error) error {
	filter := schemas.SubjectDLQPrefix + ">"
	if stage != "" {
		filter = schemas.DLQSubject(stage)
	}
	return b.Reader().Messages(ctx, schemas.StreamDLQ, filter, 0, func(m *jetstream.RawStreamMsg) error {
		return fn(parseDeadLetter(m))
	})
}

// ErrNoDeadLetter is returned for a DLQ id that holds nothing.
var ErrNoDeadLetter = errors.New("no such dead letter")

// GetDeadLetter reads one dead letter by its id (its DLQ sequence).
func (b *Bus) GetDeadLetter(ctx context.Context, id uint64) (DeadLetter, error) {
	s, err := b.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		return DeadLetter{}, err
	}
	var m *jetstream.RawStreamMsg
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		m, err = s.GetMsg(ctx, id)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return DeadLetter{}, fmt.Errorf("dead letter %d: %w", id, ErrNoDeadLetter)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("dead letter %d: %w", id, err)
	}
	return parseDeadLetter(m), nil
}

// codeSequenceNotFound is the server's answer to the deletion of a
// message it does not hold.
const codeSequenceNotFound = 10043

// RemoveDeadLetter deletes a dead letter once it was dealt with.
func (b *Bus) RemoveDeadLetter(ctx context.Context, id uint64) error {
	s, err := b.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		return err
	}
	// Repeatable: a deletion stored at the first attempt makes the
	// retry's "not found", which is no error.
	err = b.retry(ctx, "", true, func(ctx context.Context) error { return s.DeleteMsg(ctx, id) })
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) && apiErrorCode(err) != codeSequenceNotFound {
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
