package rerender

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer/service"
)

// Bucket and Key keep the fingerprint of the transformer the store was
// last re-rendered with.
const (
	Bucket = "bomstream-rendered"
	Key    = "fingerprint"
)

// Stored is the fingerprint the store was last re-rendered with; "" when
// none was stored (a store written before re-rendering existed, or a new
// one).
func Stored(ctx context.Context, bus *stream.Bus) (string, error) {
	kv, err := bus.KeyValue(ctx, Bucket)
	if err != nil {
		return "", fmt.Errorf("rendered fingerprint: %w", err)
	}
	e, err := kv.Get(ctx, Key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("rendered fingerprint: %w", err)
	}
	return string(e.Value()), nil
}

// Store records fp as the fingerprint the store is rendered with.
func Store(ctx context.Context, bus *stream.Bus, fp string) error {
	kv, err := bus.KeyValue(ctx, Bucket)
	if err != nil {
		return fmt.Errorf("rendered fingerprint: %w", err)
	}
	if _, err := kv.Put(ctx, Key, []byte(fp)); err != nil {
		return fmt.Errorf("rendered fingerprint: %w", err)
	}
	return nil
}

// AtStart re-renders the store when the fingerprint it was rendered with is
// missing or not opts.Fingerprint, then stores opts.Fingerprint; ran says
// a pass was made. A pass that failed stores nothing: the next start tries
// again. The process calling it runs the transformer stage, which renders
// the events the pass appends.
func AtStart(ctx context.Context, bus *stream.Bus, r service.Renderer, opts Options) (rep Report, ran bool, err error) {
	if opts.Fingerprint == "" || opts.DryRun {
		return rep, false, errors.New("rerender at start: needs a fingerprint and no dry run")
	}
	stored, err := Stored(ctx, bus)
	if err != nil || stored == opts.Fingerprint {
		return rep, false, err
	}
	rep, err = Rerender(ctx, bus, r, opts)
	if err != nil {
		return rep, true, err
	}
	return rep, true, Store(ctx, bus, opts.Fingerprint)
}
