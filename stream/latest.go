package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

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
