package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
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

// ConsumerState is where a durable consumer stands on its stream.
type ConsumerState struct {
	Stream, Name string
	// Delivered is the stream sequence of the last message delivered;
	// AckFloor the one up to which every message is settled.
	Delivered, AckFloor uint64
	// Pending counts the messages not delivered yet, AckPending the ones
	// delivered and not settled.
	Pending    uint64
	AckPending int
	Created    time.Time
	// FromStart says it was made to deliver the whole stream (not from a
	// sequence or a time on).
	FromStart bool
}

// List lists the durable consumers of streamName. A consumer the
// server's listing leaves out (its leader is being elected: the listing
// names it missing, which the client drops) is asked for by name, for at
// most missingWait: a durable consumer's new leader answers by then, while
// a reader's ordered consumer on a server that stopped may never answer.
func (d Durables) List(ctx context.Context, streamName string) ([]ConsumerState, error) {
	b := d.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	infos := map[string]*jetstream.ConsumerInfo{}
	var names []string
	err = b.retry(ctx, "", true, func(ctx context.Context) error {
		clear(infos)
		l := s.ListConsumers(ctx)
		for ci := range l.Info() {
			infos[ci.Name] = ci
		}
		if err := l.Err(); err != nil {
			return err
		}
		names = names[:0]
		nl := s.ConsumerNames(ctx)
		for name := range nl.Name() {
			names = append(names, name)
		}
		return nl.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("consumers of %s: %w", streamName, err)
	}
	var out []ConsumerState
	for _, name := range names {
		ci, ok := infos[name]
		if !ok {
			mctx, cancel := context.WithTimeout(ctx, missingWait)
			err := b.retry(mctx, "", true, func(ctx context.Context) error {
				c, err := s.Consumer(ctx, name)
				if err == nil {
					ci = c.CachedInfo()
				}
				return err
			})
			cancel()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("consumers of %s: %w", streamName, ctx.Err())
			}
			if err != nil { // deleted since it was listed, or unreachable
				b.log.Debug("consumer left out of a listing", zap.String("stream", streamName), zap.String("consumer", name), zap.Error(err))
				continue
			}
		}
		if ci.Config.Durable == "" {
			continue // an ordered consumer of a reader
		}
		out = append(out, ConsumerState{Stream: streamName, Name: ci.Name,
			Delivered: ci.Delivered.Stream, AckFloor: ci.AckFloor.Stream,
			Pending: ci.NumPending, AckPending: ci.NumAckPending, Created: ci.Created,
			FromStart: ci.Config.DeliverPolicy == jetstream.DeliverAllPolicy})
	}
	return out, nil
}

// missingWait bounds how long List asks for a consumer its listing
// left out.
const missingWait = 10 * time.Second

// Reset moves a durable consumer so that seq is the next message
// it delivers, every message before it counting as settled; seq 0 means
// its ack floor, so that every unsettled message comes again. Its stage's
// dedupe must absorb what comes twice (a sink's ledger does).
func (d Durables) Reset(ctx context.Context, streamName, durable string, seq uint64) error {
	b := d.b
	// Repeatable: a second reset to the same place moves nothing.
	err := b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		if seq == 0 {
			_, err = b.js.ResetConsumer(ctx, streamName, durable)
		} else {
			_, err = b.js.ResetConsumerToSequence(ctx, streamName, durable, seq)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("reset consumer %s on %s to %d: %w", durable, streamName, seq, err)
	}
	return nil
}

// Delete removes a durable consumer; its stage creates it again
// when it starts. A consumer that does not exist is no error.
func (d Durables) Delete(ctx context.Context, streamName, durable string) error {
	b := d.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return err
	}
	err = b.retry(ctx, "", true, func(ctx context.Context) error { return s.DeleteConsumer(ctx, durable) })
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s on %s: %w", durable, streamName, err)
	}
	return nil
}
