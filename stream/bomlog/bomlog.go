package bomlog

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Log is the BOM log over a bus. It holds nothing but the bus, so it is
// cheap to pass by value and safe for concurrent use.
type Log struct{ bus *stream.Bus }

// New is the BOM log over bus.
func New(bus *stream.Bus) Log { return Log{bus} }

// Append stores out, a BOMS message as schemas.BOMMessage.Encode made it,
// under the message id its codec set (schemas.HeaderMsgID; none when a
// repair took it off), and waits for the stream's ack. A retry within the
// duplicate window is stored once: the ack says Duplicate.
func (l Log) Append(ctx context.Context, out *nats.Msg) (stream.PubAck, error) {
	return l.bus.Writer().Publish(ctx, out, out.Header.Get(schemas.HeaderMsgID))
}

// Stored is a BOMS message as read back, decoded as far as it reads.
type Stored struct {
	schemas.BOMMessage
	// Seq is its sequence on BOMS.
	Seq uint64
	// Err is what kept it from decoding in full; nil when it did.
	Err error
}

// Last is the last message on subject (schemas.BOMsSubject of a
// workload): its BOM or tombstone now. ok is false when the subject has
// none. err is the read's; a message that does not decode in full says
// so in Stored.Err.
func (l Log) Last(ctx context.Context, subject string) (last Stored, ok bool, err error) {
	m, err := l.bus.Reader().LastMsg(ctx, schemas.StreamBOMs, subject)
	if err != nil || m == nil {
		return Stored{}, false, err
	}
	msg, bad := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
	return Stored{BOMMessage: msg, Seq: m.Sequence, Err: bad}, true, nil
}
