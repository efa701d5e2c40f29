package rerender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer/service"
)

// Bucket and Key keep the fingerprint of the transformer the store was
// last re-rendered with.
const (
	Bucket = "bomstream-rendered"
	Key    = "fingerprint"
)

// Record is what the store keeps of the transformer it is rendered with.
type Record struct {
	// Fingerprint is the transformer's (transformer.Renderer.Fingerprint).
	Fingerprint string `json:"fingerprint"`
	// OtherUpTo is the CHANGES sequence up to which earlier transformers
	// handled the events (the transformer's ack floor before this one
	// began): what they rendered to nothing, this one may render, so a
	// check does not take their missing outcomes for losses.
	OtherUpTo uint64 `json:"otherUpTo"`
}

// Stored is the record of the transformer the store was last re-rendered
// with; ok is false when there is none (a store written before
// re-rendering existed, or a new one).
func Stored(ctx context.Context, bus *stream.Bus) (rec Record, ok bool, err error) {
	kv, err := bus.KeyValue(ctx, Bucket)
	if err != nil {
		return rec, false, fmt.Errorf("rendered fingerprint: %w", err)
	}
	// Through a leader election, as every request of a run (Bus.Retry): a
	// read is harmless twice.
	var e jetstream.KeyValueEntry
	err = bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		e, err = kv.Get(ctx, Key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return err
	})
	if err == nil && e == nil {
		err = jetstream.ErrKeyNotFound
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("rendered fingerprint: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return rec, false, fmt.Errorf("rendered fingerprint: %w", err)
	}
	return rec, true, nil
}

// Store records rec as the transformer the store is rendered with.
func Store(ctx context.Context, bus *stream.Bus, rec Record) error {
	kv, err := bus.KeyValue(ctx, Bucket)
	if err != nil {
		return fmt.Errorf("rendered fingerprint: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("rendered fingerprint: %w", err)
	}
	// A put of the same value is harmless twice.
	if err := bus.Retry(ctx, true, func(ctx context.Context) error {
		_, err := kv.Put(ctx, Key, b)
		return err
	}); err != nil {
		return fmt.Errorf("rendered fingerprint: %w", err)
	}
	return nil
}

// OtherUpTo is check.Config.OtherUpTo for a checker rendering with the
// transformer of fingerprint fp: every event when the store was rendered
// by another one (or does not say), else the stored sequence.
func OtherUpTo(ctx context.Context, bus *stream.Bus, fp string) (uint64, error) {
	rec, ok, err := Stored(ctx, bus)
	if err != nil {
		return 0, err
	}
	if !ok || rec.Fingerprint != fp {
		return math.MaxUint64, nil
	}
	return rec.OtherUpTo, nil
}

// AtStart re-renders the store when the fingerprint it was rendered with is
// missing or not opts.Fingerprint, then stores opts.Fingerprint with
// OtherUpTo before: the transformer's ack floor read before this process's
// transformer began (AckFloor). ran says a pass was made. A pass that
// failed stores nothing: the next start tries again. The process calling
// it runs the transformer stage, which renders the events the pass appends.
func AtStart(ctx context.Context, bus *stream.Bus, r service.Renderer, opts Options, before uint64) (rep Report, ran bool, err error) {
	if opts.Fingerprint == "" || opts.DryRun {
		return rep, false, errors.New("rerender at start: needs a fingerprint and no dry run")
	}
	stored, ok, err := Stored(ctx, bus)
	if err != nil || ok && stored.Fingerprint == opts.Fingerprint {
		return rep, false, err
	}
	rep, err = Rerender(ctx, bus, r, opts)
	if err != nil {
		return rep, true, err
	}
	return rep, true, Store(ctx, bus, Record{Fingerprint: opts.Fingerprint, OtherUpTo: before})
}

// StoreAfter records fp after a pass that began at floor (Report.Floor):
// when the store was rendered with fp already, its OtherUpTo stays.
func StoreAfter(ctx context.Context, bus *stream.Bus, fp string, floor uint64) error {
	stored, ok, err := Stored(ctx, bus)
	if err != nil {
		return err
	}
	if ok && stored.Fingerprint == fp {
		return nil
	}
	return Store(ctx, bus, Record{Fingerprint: fp, OtherUpTo: floor})
}

// Untouched reports whether no transformer has handled anything in the
// store yet: none acked an event before this process's began (before, its
// AckFloor, is 0) and BOMS never held a message. A store untouched when
// the process's transformer starts is rendered by it alone, so AtStart
// has nothing to compare: the caller stores the fingerprint instead
// (StoreAfter). Ask before the process's transformer runs.
func Untouched(ctx context.Context, bus *stream.Bus, before uint64) (bool, error) {
	if before > 0 {
		return false, nil
	}
	st, err := bus.Reader().State(ctx, schemas.StreamBOMs)
	if err != nil {
		return false, fmt.Errorf("rerender: %w", err)
	}
	return st.LastSeq == 0, nil
}
