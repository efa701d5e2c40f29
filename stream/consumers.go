package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Durables administers the durable consumers the stages consume through:
// where each stands, whether one has caught up, and moving or deleting one
// (the store check, redrive, replay). It holds nothing but the bus.
type Durables struct{ b *Bus }

// Durables hands out the administration of the durable consumers.
func (b *Bus) Durables() Durables { return Durables{b} }

// CaughtUp reports whether the durable consumer has been delivered, and has
// acknowledged (or terminated), every message stored on streamName when the
// call began. A consumer that does not exist yet has not caught up.
//
// NumPending alone is not enough: a consumer created a moment ago can report
// nothing pending before it has looked at the stream, so the delivered stream
// sequence is compared with the stream's last sequence as well.
func (d Durables) CaughtUp(ctx context.Context, streamName, durable string) (bool, error) {
	b := d.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return false, err
	}
	// Each request rides through a leader election of the stream or of
	// the consumer (run --once asks this of every stage until it drains).
	var si *jetstream.StreamInfo
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		si, err = s.Info(ctx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("stream %s: %w", streamName, err)
	}
	var ci *jetstream.ConsumerInfo
	err = b.retry(ctx, "", true, func(ctx context.Context) error {
		c, err := s.Consumer(ctx, durable)
		if err != nil {
			return err
		}
		ci = c.CachedInfo() // Consumer read it just now
		return nil
	})
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("consumer %s on %s: %w", durable, streamName, err)
	}
	return ci.NumPending == 0 && ci.NumAckPending == 0 && ci.Delivered.Stream >= si.State.LastSeq, nil
}
