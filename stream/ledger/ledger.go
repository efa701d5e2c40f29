package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/stream"
)

// Ledger is a sink's KV bucket ("bomstream-ledger-<sink>"): what the sink
// has applied, one entry per key, each entry carrying the revision that a
// conditional Put must name. It has no age or size limit: a ledger that
// forgot would let a replay write twice.
type Ledger struct {
	kv  jetstream.KeyValue
	bus *stream.Bus
}

// ErrConflict is returned by Put when the entry changed since the
// revision the caller read (another process wrote it).
var ErrConflict = errors.New("ledger entry changed since it was read")

// bucketPrefix names the KV bucket of a sink's ledger.
const bucketPrefix = "bomstream-ledger-"

// Open opens the ledger of sink, creating its bucket when missing.
func Open(ctx context.Context, bus *stream.Bus, sink string) (*Ledger, error) {
	kv, err := bus.KeyValue(ctx, bucketPrefix+sink)
	if err != nil {
		return nil, fmt.Errorf("ledger for sink %s: %w", sink, err)
	}
	return &Ledger{kv: kv, bus: bus}, nil
}

// Names lists the sinks that have a ledger, whether configured now or not.
func Names(ctx context.Context, bus *stream.Bus) ([]string, error) {
	buckets, err := bus.Buckets(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledgers: %w", err)
	}
	var out []string
	for _, name := range buckets {
		if sink, ok := strings.CutPrefix(name, bucketPrefix); ok {
			out = append(out, sink)
		}
	}
	return out, nil
}

// Get reads key; ok is false when it has no entry.
func (l *Ledger) Get(ctx context.Context, key string) (value []byte, rev uint64, ok bool, err error) {
	var e jetstream.KeyValueEntry
	err = l.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		e, err = l.kv.Get(ctx, key)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("ledger %s: %w", key, err)
	}
	return e.Value(), e.Revision(), true, nil
}

// Put writes key only if its revision is still rev (0: only if it has no
// entry), and returns the new revision; ErrConflict otherwise.
func (l *Ledger) Put(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	var (
		n   uint64
		err error
	)
	// A conditional write is repeatable: when a first attempt was stored
	// but its answer lost, the retry is a conflict, and the caller reads
	// the entry again and finds its own write.
	err = l.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		if rev == 0 {
			n, err = l.kv.Create(ctx, key, value)
		} else {
			n, err = l.kv.Update(ctx, key, value, rev)
		}
		return err
	})
	if errors.Is(err, jetstream.ErrKeyExists) || stream.IsWrongLastSeq(err) {
		return 0, fmt.Errorf("ledger %s: %w", key, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("ledger %s: %w", key, err)
	}
	return n, nil
}

// All calls fn with every current entry, for loading the ledger at start.
// Starting the read rides through a leader election of the bucket.
func (l *Ledger) All(ctx context.Context, fn func(key string, value []byte, rev uint64)) error {
	var w jetstream.KeyWatcher
	err := l.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		// Not under the attempt's deadline: the watch outlives the call.
		w, err = l.kv.WatchAll(context.WithoutCancel(ctx), jetstream.IgnoreDeletes())
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("ledger: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("ledger: watch closed")
			}
			if e == nil {
				return nil // the initial values are all delivered
			}
			fn(e.Key(), e.Value(), e.Revision())
		}
	}
}
