package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reader reads what the streams store: walks over a subject's messages,
// the last message per subject, one message by sequence, and a stream's
// state with the sequences its store lost. It holds nothing but the bus,
// so it is cheap to pass by value and safe for concurrent use.
type Reader struct{ b *Bus }

// Reader hands out the bus's reads.
func (b *Bus) Reader() Reader { return Reader{b} }

// Stream is the stream called name, as [Bus.Stream] gives it, for a reader
// that consumes it or counts its subjects.
func (r Reader) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	return r.b.Stream(ctx, name)
}

// Retry is [Bus.Retry], for a reader's own calls on a stream handle.
func (r Reader) Retry(ctx context.Context, repeatable bool, fn func(ctx context.Context) error) error {
	return r.b.Retry(ctx, repeatable, fn)
}

// LastMsg is the last stored message of subject on streamName, read with a
// direct get; nil (and no error) when the subject has none.
func (r Reader) LastMsg(ctx context.Context, streamName, subject string) (*jetstream.RawStreamMsg, error) {
	b := r.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	var m *jetstream.RawStreamMsg
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		m, err = s.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, nats.ErrNoResponders) && b.streamGone(ctx, streamName) {
			return fmt.Errorf("stream %s: %w", streamName, jetstream.ErrStreamNotFound)
		}
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last message of %s on %s: %w", subject, streamName, err)
	}
	return m, nil
}

// LastSeq is the last sequence stored on streamName (0 when empty).
func (r Reader) LastSeq(ctx context.Context, streamName string) (uint64, error) {
	b := r.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return 0, err
	}
	var info *jetstream.StreamInfo
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", streamName, err)
	}
	return info.State.LastSeq, nil
}

// GetMsg reads the message stored at seq on streamName; nil (and no error)
// when there is none.
func (r Reader) GetMsg(ctx context.Context, streamName string, seq uint64) (*jetstream.RawStreamMsg, error) {
	b := r.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	var m *jetstream.RawStreamMsg
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		m, err = s.GetMsg(ctx, seq)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s seq %d: %w", streamName, seq, err)
	}
	return m, nil
}

// LastPerSubject calls fn, in stream order, with the last message of every
// subject of streamName that matches filter; headersOnly leaves out the
// bodies. It ends once it delivered the last matching message stored when
// it began, or when the consumer says nothing is left, whichever comes
// first: over a store that lost messages the server's count can be wrong. ErrStop from fn
// ends it early without an error.
func (r Reader) LastPerSubject(ctx context.Context, streamName, filter string, headersOnly bool, fn func(*jetstream.RawStreamMsg) error) error {
	b := r.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return err
	}
	var end uint64
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		end, err = r.LastStored(ctx, streamName, filter)
		return err
	})
	if err != nil {
		return fmt.Errorf("last messages of %s: %w", filter, err)
	}
	if end == 0 {
		return nil // no subject yet
	}
	var cons jetstream.Consumer
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		cons, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{filter},
			DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
			HeadersOnly:    headersOnly,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("last messages of %s: %w", filter, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("last messages of %s: %w", filter, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("last messages of %s: %w", filter, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("last messages of %s: %w", filter, err)
		}
		seq := md.Sequence.Stream
		err = fn(&jetstream.RawStreamMsg{Subject: msg.Subject(), Sequence: seq, Header: msg.Headers(), Data: msg.Data(), Time: md.Timestamp})
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
		// Past end, every subject's last message stored at the call was
		// delivered (one appended since may come first, in its place).
		if seq >= end || md.NumPending == 0 {
			return nil
		}
	}
}
