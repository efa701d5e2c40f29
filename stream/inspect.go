package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// What the store's self-check (package stream/check) reads and repairs
// besides messages: where the durable consumers stand, and the ledgers.

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

// Consumers lists the durable consumers of streamName.
func (b *Bus) Consumers(ctx context.Context, streamName string) ([]ConsumerState, error) {
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	l := s.ListConsumers(ctx)
	var out []ConsumerState
	for ci := range l.Info() {
		if ci.Config.Durable == "" {
			continue // an ordered consumer of a reader
		}
		out = append(out, ConsumerState{Stream: streamName, Name: ci.Name,
			Delivered: ci.Delivered.Stream, AckFloor: ci.AckFloor.Stream,
			Pending: ci.NumPending, AckPending: ci.NumAckPending, Created: ci.Created,
			FromStart: ci.Config.DeliverPolicy == jetstream.DeliverAllPolicy})
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("consumers of %s: %w", streamName, err)
	}
	return out, nil
}

// ResetConsumer moves a durable consumer so that seq is the next message
// it delivers, every message before it counting as settled; seq 0 means
// its ack floor, so that every unsettled message comes again. Its stage's
// dedupe must absorb what comes twice (a sink's ledger does).
func (b *Bus) ResetConsumer(ctx context.Context, streamName, durable string, seq uint64) error {
	var err error
	if seq == 0 {
		_, err = b.js.ResetConsumer(ctx, streamName, durable)
	} else {
		_, err = b.js.ResetConsumerToSequence(ctx, streamName, durable, seq)
	}
	if err != nil {
		return fmt.Errorf("reset consumer %s on %s to %d: %w", durable, streamName, seq, err)
	}
	return nil
}

// DeleteConsumer removes a durable consumer; its stage creates it again
// when it starts. A consumer that does not exist is no error.
func (b *Bus) DeleteConsumer(ctx context.Context, streamName, durable string) error {
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return err
	}
	if err := s.DeleteConsumer(ctx, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s on %s: %w", durable, streamName, err)
	}
	return nil
}

// ledgerPrefix names the KV bucket of a sink's ledger.
const ledgerPrefix = "bomstream-ledger-"

// LedgerNames lists the sinks that have a ledger, whether configured now
// or not.
func (b *Bus) LedgerNames(ctx context.Context) ([]string, error) {
	l := b.js.KeyValueStoreNames(ctx)
	var out []string
	for name := range l.Name() {
		if sink, ok := strings.CutPrefix(name, ledgerPrefix); ok {
			out = append(out, sink)
		}
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("ledgers: %w", err)
	}
	return out, nil
}

// GetMsg reads the message stored at seq on streamName; nil (and no error)
// when there is none.
func (b *Bus) GetMsg(ctx context.Context, streamName string, seq uint64) (*jetstream.RawStreamMsg, error) {
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s seq %d: %w", streamName, seq, err)
	}
	return m, nil
}
