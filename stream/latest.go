package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// LatestChanges calls fn with the last event of every workload of cluster on
// CHANGES (its current state: an observation or a tombstone) and the event's
// stream sequence. It reads through an ordered consumer that delivers the last
// message per subject, and stops when that consumer has nothing left. An unreadable
// event is reported as an error naming its sequence, after the others.
func (b *Bus) LatestChanges(ctx context.Context, cluster string, fn func(ev schemas.WorkloadChange, seq uint64) error) error {
	var bad []error
	err := b.Reader().LastPerSubject(ctx, schemas.StreamChanges, schemas.SubjectChangesPrefix+cluster+".>", false, func(m *jetstream.RawStreamMsg) error {
		ev, err := DecodeChange(m.Data)
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
