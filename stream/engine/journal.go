package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/stream"
)

// claim takes cons over for a process that owns the server: its pin is
// released, and, when a dead predecessor left messages unsettled, the
// consumer is rewound to its ack floor so that they come again now, in
// order, before anything newer. Work on them is counted in the crash
// journal, which stands in for the server's delivery count (the rewind
// clears it).
func (e *Engine) claim(ctx context.Context, cons jetstream.Consumer) error {
	if err := e.unpin(ctx); err != nil {
		e.log.Debug("unpin at start", zap.Error(err))
	}
	var info *jetstream.ConsumerInfo
	err := e.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		info, err = cons.Info(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", e.cfg.Durable, e.cfg.Stream, err)
	}
	if e.journal == nil {
		if e.journal, err = openJournal(ctx, e.bus, e.cfg.Durable, e.log); err != nil {
			return err
		}
	}
	if info.NumAckPending == 0 && info.Delivered.Stream <= info.AckFloor.Stream {
		return nil
	}
	if err := e.bus.Durables().Reset(ctx, e.cfg.Stream, e.cfg.Durable, 0); err != nil {
		return err
	}
	e.recovered.Store(info.Delivered.Stream)
	e.log.Info("a previous process left messages unsettled: taking them again from the ack floor",
		zap.Uint64("ackFloor", info.AckFloor.Stream), zap.Uint64("delivered", info.Delivered.Stream), zap.Int("pending", info.NumAckPending))
	return nil
}

// journal counts, per stream sequence, how often a stage began work on a
// message that a crash then left unsettled: the poison limit across
// rewinds. Entries live in the KV bucket "bomstream-journal", keyed
// "<durable>.<seq>", and go once the message is settled.
type journal struct {
	kv      jetstream.KeyValue
	bus     *stream.Bus
	durable string
	log     *zap.Logger
}

func openJournal(ctx context.Context, bus *stream.Bus, durable string, log *zap.Logger) (*journal, error) {
	kv, err := bus.KeyValue(ctx, "bomstream-journal")
	if err != nil {
		return nil, fmt.Errorf("crash journal: %w", err)
	}
	return &journal{kv: kv, bus: bus, durable: durable, log: log}, nil
}

func (j *journal) key(seq uint64) string { return j.durable + "." + strconv.FormatUint(seq, 10) }

// begin records that work on seq begins and returns how many times it has
// begun, this one included. Each request rides through a leader election;
// a create or update whose first attempt was stored fails its retry as a
// conflict, and the entry is read again (that begin then counts twice: the
// poison limit comes one early, never late).
func (j *journal) begin(ctx context.Context, seq uint64) (int, error) {
	key := j.key(seq)
	for range 5 {
		var e jetstream.KeyValueEntry
		err := j.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
			e, err = j.kv.Get(ctx, key)
			return err
		})
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			err := j.bus.Retry(ctx, true, func(ctx context.Context) error {
				_, err := j.kv.Create(ctx, key, []byte("1"))
				return err
			})
			if err == nil {
				return 1, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 1, err
			}
		case err != nil:
			return 1, err
		default:
			n, _ := strconv.Atoi(string(e.Value()))
			n++
			err := j.bus.Retry(ctx, true, func(ctx context.Context) error {
				_, err := j.kv.Update(ctx, key, []byte(strconv.Itoa(n)), e.Revision())
				return err
			})
			if err == nil {
				return n, nil
			}
		}
	}
	return 1, fmt.Errorf("crash journal %s: kept changing", key)
}

// end forgets seq once it is settled.
func (j *journal) end(seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := j.bus.Retry(ctx, true, func(ctx context.Context) error {
		return j.kv.Purge(ctx, j.key(seq))
	})
	if err != nil {
		j.log.Debug("crash journal", zap.Uint64("seq", seq), zap.Error(err))
	}
}
