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
	s, err := b.stream(ctx, schemas.StreamChanges)
	if err != nil {
		return fmt.Errorf("latest changes of %s: %w", cluster, err)
	}
	filter := schemas.SubjectChangesPrefix + cluster + ".>"
	if _, err := s.GetLastMsgForSubject(ctx, filter); errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // no workload yet
	} else if err != nil {
		return fmt.Errorf("latest changes of %s: %w", cluster, err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return fmt.Errorf("latest changes of %s: %w", cluster, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("latest changes of %s: %w", cluster, err)
	}
	defer it.Stop()
	var bad []error
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("latest changes of %s: %w", cluster, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("latest changes of %s: %w", cluster, err)
		}
		if ev, err := DecodeChange(msg.Data()); err != nil {
			bad = append(bad, fmt.Errorf("CHANGES seq %d: %w", md.Sequence.Stream, err))
		} else if err := fn(ev, md.Sequence.Stream); errors.Is(err, ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
		// The consumer counts what is left of the last-per-subject set.
		if md.NumPending == 0 {
			break
		}
	}
	return errors.Join(bad...)
}
