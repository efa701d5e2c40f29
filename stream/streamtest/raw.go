package streamtest

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishConsume is the raw JetStream baseline of the benchmarks: it publishes
// msgs asynchronously (at most 1,000 awaiting acks), then pulls as many
// messages from cons and acks each.
func PublishConsume(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer, msgs []*nats.Msg) error {
	const window = 1000
	pending := make([]jetstream.PubAckFuture, 0, window)
	flush := func() error {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("publish: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pending = pending[:0]
		return nil
	}
	for _, m := range msgs {
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		if pending = append(pending, f); len(pending) == window {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(500))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer it.Stop()
	for range msgs {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		if err := msg.Ack(); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
	}
	return nil
}

// SyncBuffer is an io.Writer that goroutines may share with a reader.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
