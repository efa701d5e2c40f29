package runner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream"
)

// Progress is told how far a replay is: messages done of total, and the
// rate in messages per second. It is called from one goroutine at a time, at
// most about twice a second and once at the end.
type Progress func(done, total uint64, rate float64)

// Replay re-drives s over BOMS from cfg.StartSeq or cfg.StartTime (zero: the
// first message) up to the last message present when it starts, through an
// ephemeral ordered consumer. It goes through the same steps as Run, with the
// same ledger: what the ledger holds is skipped, so a replay into the same
// sink writes nothing twice, while a sink under a new name (a new ledger)
// receives every BOM once. Failures go to the DLQ as in Run. cfg.Durable and
// cfg.AckWait are not used. Replay does not close the sink.
//
// It returns the replay's own Stats, and an error when ctx ends first or when
// some messages could neither be exported nor dead-lettered (ledger or DLQ
// unavailable); such messages are counted in none of the Stats.
func Replay(ctx context.Context, bus *stream.Bus, s sinks.Sink, cfg Config, log *zap.Logger, progress Progress) (Stats, error) {
	if err := sinks.ValidateName(s.Name()); err != nil {
		return Stats{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Stats{}, fmt.Errorf("replay %s: %w", s.Name(), err)
	}
	cfg = cfg.withDefaults(s.Name())
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("sink", s.Name()), zap.Bool("replay", true))
	m, _ := newMetrics(nil, s.Name()) // unregistered: cannot fail
	e, err := newEngine(ctx, bus, s, cfg, log, m, false)
	if err != nil {
		return Stats{}, err
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: []string{schemas.SubjectBOMsPrefix + ">"}}
	setStart(&occ.DeliverPolicy, &occ.OptStartSeq, &occ.OptStartTime, cfg)
	cons, err := e.boms.OrderedConsumer(ctx, occ)
	if err != nil {
		return Stats{}, fmt.Errorf("replay %s: ordered consumer: %w", e.name, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("replay %s: consumer info: %w", e.name, err)
	}
	total := info.NumPending
	log.Info("replay started", zap.Uint64("total", total), zap.Uint64("startSeq", cfg.StartSeq), zap.Time("startTime", cfg.StartTime))
	if total == 0 {
		if progress != nil {
			progress(0, 0, 0)
		}
		return e.n.snapshot(), nil
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(max(replayBuffer, 2*cfg.Concurrency)))
	if err != nil {
		return Stats{}, fmt.Errorf("replay %s: consume: %w", e.name, err)
	}
	defer iter.Stop()

	var (
		done, failed atomic.Uint64
		mu           sync.Mutex
		start        = time.Now()
		lastReport   time.Time
	)
	report := func(final bool) {
		if progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if !final && now.Sub(lastReport) < 500*time.Millisecond {
			return
		}
		lastReport = now
		d := done.Load()
		progress(d, total, float64(d)/max(now.Sub(start).Seconds(), 1e-9))
	}
	p := newPool(cfg.Concurrency, func(msg jetstream.Msg, release func()) {
		defer release()
		if ctx.Err() != nil {
			return
		}
		if err := e.handle(ctx, ctx, msg, func() {}); err != nil {
			failed.Add(1)
			log.Error("replay message not processed", zap.String("subject", msg.Subject()), zap.Error(err))
		}
		done.Add(1)
		report(false)
	})
	var runErr error
	for n := uint64(0); n < total; n++ {
		msg, err := iter.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				runErr = fmt.Errorf("replay %s: %w", e.name, err)
			}
			break
		}
		p.submit(msg)
		if meta, err := msg.Metadata(); err == nil && meta.NumPending == 0 {
			break // the range shrank under us (limits, purge)
		}
	}
	p.close()
	report(true)
	stats := e.n.snapshot()
	if err := ctx.Err(); err != nil {
		return stats, fmt.Errorf("replay %s: %w", e.name, err)
	}
	if runErr != nil {
		return stats, runErr
	}
	if f := failed.Load(); f > 0 {
		return stats, fmt.Errorf("replay %s: %d messages neither exported nor dead-lettered", e.name, f)
	}
	log.Info("replay done", zap.Any("stats", stats))
	return stats, nil
}

// replayBuffer is how many messages Replay's ordered consumer asks for at a
// time. It has no ack deadline to respect, and few large pull requests are
// both cheaper and less exposed to the client's missed-heartbeat recovery
// (a 10 s stall) than many small ones.
const replayBuffer = 256
