package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// Headers a dead letter carries besides schemas.HeaderReason.
const (
	// HeaderDLQSubject is the subject the failed message was read from.
	HeaderDLQSubject = "Bomstream-Dlq-Subject"
	// HeaderDLQSeq is its sequence in its stream, in decimal.
	HeaderDLQSeq = "Bomstream-Dlq-Seq"
	// HeaderDLQMsgID keeps the failed message's Nats-Msg-Id, which cannot be
	// copied as is (the DLQ stream would deduplicate on it).
	HeaderDLQMsgID = "Bomstream-Dlq-Msg-Id"
)

// MaxReasonBytes bounds the reason header of a dead letter.
const MaxReasonBytes = 1024

// DeadLetter parks a message that a stage could not process on
// schemas.DLQSubject(stage): the original bytes, the original headers, and
// schemas.HeaderReason = reason. The reason is an error text: it must never
// carry a secret (bomstream's errors name settings and files, not values); it
// is flattened to one line and cut to MaxReasonBytes.
//
// JetStream control headers ("Nats-*") are not copied, since the server would
// act on them (Nats-Msg-Id is kept as HeaderDLQMsgID). hdr may already hold
// HeaderDLQSubject and HeaderDLQSeq; DeadLetterMsg fills them from a consumed
// message. hdr is not modified. DeadLetter waits for the stream's ack.
func (b *Bus) DeadLetter(ctx context.Context, stage string, data []byte, hdr nats.Header, reason string) error {
	if stage == "" || strings.ContainsAny(stage, ".*> \t\r\n") {
		return fmt.Errorf("dead letter: stage %q is not one subject token", stage)
	}
	m := nats.NewMsg(schemas.DLQSubject(stage))
	m.Data = data
	for k, vs := range hdr {
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			if strings.EqualFold(k, jetstream.MsgIDHeader) && len(vs) > 0 {
				m.Header.Set(HeaderDLQMsgID, vs[0])
			}
			continue
		}
		m.Header[k] = append([]string(nil), vs...)
	}
	m.Header.Set(schemas.HeaderReason, Reason(reason))
	if _, err := b.JS.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("dead letter to %s: %w", m.Subject, err)
	}
	return nil
}

// DeadLetterMsg is DeadLetter for a message consumed from a stream: it adds
// the message's subject and stream sequence to the dead letter.
func (b *Bus) DeadLetterMsg(ctx context.Context, stage string, msg jetstream.Msg, reason string) error {
	hdr := nats.Header{}
	for k, vs := range msg.Headers() {
		hdr[k] = vs
	}
	hdr.Set(HeaderDLQSubject, msg.Subject())
	if md, err := msg.Metadata(); err == nil {
		hdr.Set(HeaderDLQSeq, strconv.FormatUint(md.Sequence.Stream, 10))
	}
	return b.DeadLetter(ctx, stage, msg.Data(), hdr, reason)
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
