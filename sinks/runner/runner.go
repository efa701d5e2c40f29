package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bomlog"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/engine"
	"github.com/bomstream/bomstream/stream/ledger"
)

// Runner drives one sink from its durable consumer on BOMS.
type Runner struct {
	bus        *stream.Bus
	sink       sinks.Sink
	name       string
	cfg        Config
	latestOnly bool
	log        *zap.Logger
	m          *metrics
	n          counters
	eng        *engine.Engine
	ledger     *ledger.Ledger

	mu    sync.Mutex
	view  map[string]cached // the ledger as this process knows it
	names map[string]uint64 // by workload name (Workload.String): the newest change applied, of any uid

	seed  maphash.Seed
	locks [256]sync.Mutex // per workload name: Run and a Replay in one process, and a workload and its re-creation, never interleave
	pre   preflight
}

// cached is a ledger entry and the revision a conditional put must name.
type cached struct {
	e   entry
	rev uint64
}

// New checks cfg and prepares a runner for s: it opens the sink's ledger
// and reads it, and registers the sink's metrics on reg (nil: none).
// latestOnly is the sink type's default, used when cfg.LatestOnly is unset.
// The consumer is created or joined by Run.
func New(bus *stream.Bus, s sinks.Sink, cfg Config, latestOnly bool, log *zap.Logger, reg prometheus.Registerer) (*Runner, error) {
	name := s.Name()
	if err := sinks.ValidateName(name); err != nil {
		return nil, err
	}
	if err := cfg.Validate("sink " + name + " runner"); err != nil {
		return nil, err
	}
	if cfg.LatestOnly != nil {
		latestOnly = *cfg.LatestOnly
	}
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("sink", name))
	m, err := newMetrics(reg, name)
	if err != nil {
		return nil, fmt.Errorf("sink %s: metrics: %w", name, err)
	}
	r := &Runner{bus: bus, sink: s, name: name, cfg: cfg, latestOnly: latestOnly, log: log, m: m,
		view: map[string]cached{}, names: map[string]uint64{}, seed: maphash.MakeSeed()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r.ledger, err = ledger.Open(ctx, bus, name); err != nil {
		return nil, err
	}
	bad := 0
	if err := r.ledger.All(ctx, func(key string, value []byte, rev uint64) {
		var e entry
		if json.Unmarshal(value, &e) != nil {
			bad++ // read again, and rewritten, when its workload comes by
			return
		}
		r.remember(key, cached{e: e, rev: rev})
	}); err != nil {
		return nil, fmt.Errorf("sink %s: read ledger: %w", name, err)
	}
	if bad > 0 {
		log.Warn("unreadable ledger entries", zap.Int("count", bad))
	}
	if r.eng, err = engine.New(bus, r.engineConfig(cfg.Config), r.handler(false, &r.n), log, reg); err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	return r, nil
}

func (r *Runner) engineConfig(ec engine.Config) engine.Config {
	ec.Stage = schemas.SinkStage(r.name)
	ec.Stream = schemas.StreamBOMs
	ec.Durable = r.cfg.durable(r.name)
	ec.Filter = schemas.SubjectBOMsPrefix + ">"
	ec.Description = "bomstream sink " + r.name
	return ec
}

// Durable is the name of the sink's consumer on BOMS.
func (r *Runner) Durable() string { return r.eng.Config().Durable }

// Stats returns what the runner has done so far. Safe to call at any time.
func (r *Runner) Stats() Stats { return stats(&r.n, r.eng) }

// stats is what n counted, with the retries and dead letters of eng.
func stats(n *counters, eng *engine.Engine) Stats {
	st := n.snapshot()
	c := eng.Counts()
	st.DeadLettered, st.Retries = c.DeadLettered, c.Retries
	return st
}

// Health reports the sink stage's state: degraded while a store keeps
// failing (the messages are retried, nothing is lost).
func (r *Runner) Health() engine.Health { return r.health() }

// Run consumes until ctx is done; see engine.Engine.Run. It does not close
// the sink.
func (r *Runner) Run(ctx context.Context) error {
	r.log.Info("sink runner started", zap.String("durable", r.Durable()), zap.Bool("latestOnly", r.latestOnly))
	stop := r.reportUp(ctx)
	defer stop()
	pctx, cancelPreflight := context.WithCancel(ctx)
	defer cancelPreflight()
	go r.runPreflight(pctx)
	err := r.eng.Run(ctx)
	r.log.Info("sink runner stopped", zap.Any("stats", r.Stats()))
	return err
}

// reportUp keeps bomstream_sink_up at 1 while the stage is up and not
// degraded, until the returned function is called.
func (r *Runner) reportUp(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if r.Health().State == engine.StateUp {
				r.m.up.Set(1)
			} else {
				r.m.up.Set(0)
			}
			select {
			case <-ctx.Done():
				r.m.up.Set(0)
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// handler takes one BOMS message through the ledger, the sink and the
// ledger again. The engine calls it for one workload at a time, in BOMS
// order, and acks the message once it returns nil; the lock by name keeps
// a workload and one re-created under its name apart too.
func (r *Runner) handler(ignoreLedger bool, n *counters) engine.Handler {
	return func(ctx context.Context, m *engine.Msg) error {
		it, err := parse(m)
		if err != nil {
			return engine.Permanent(fmt.Errorf("bad message: %w", err))
		}
		name := it.workload.String()
		lk := &r.locks[maphash.String(r.seed, name)%uint64(len(r.locks))]
		lk.Lock()
		defer lk.Unlock()
		key := ledgerKey(it.workload)
		if !ignoreLedger && r.cached(key).e.ChangeSeq >= it.changeSeq {
			n.dup.Add(1)
			r.m.skipped.WithLabelValues("duplicate").Inc()
			return nil
		}
		older := r.newestOf(name) > it.changeSeq
		if r.latestOnly {
			skip, err := r.skipSuperseded(ctx, m.Subject, it, older)
			if err != nil || skip {
				if skip {
					n.superseded.Add(1)
					r.m.skipped.WithLabelValues("superseded").Inc()
				}
				return err
			}
		}
		if err := r.apply(ctx, it, older); err != nil {
			return err
		}
		if err := r.record(ctx, key, it); err != nil {
			// Redelivery calls the idempotent sink again, then retries the put.
			return err
		}
		if it.tombstone {
			n.tombstones.Add(1)
			r.m.tombstones.Inc()
		} else {
			n.exported.Add(1)
			r.m.exported.Inc()
		}
		return nil
	}
}

// skipSuperseded reports whether a latest-only sink skips it: a BOM older
// than a version applied for its name, or a version older than the last
// one BOMS holds for its workload.
func (r *Runner) skipSuperseded(ctx context.Context, subject string, it item, older bool) (bool, error) {
	if older && !it.tombstone {
		return true, nil
	}
	return r.superseded(ctx, subject, it.changeSeq)
}

// apply checks a BOM and hands the version to the sink, telling it whether
// a newer version of its name was applied before (older).
func (r *Runner) apply(ctx context.Context, it item, older bool) error {
	if !it.tombstone {
		if err := it.bom.Check(); err != nil {
			return err // permanent: the message is dead-lettered
		}
	}
	start := time.Now()
	var err error
	if it.tombstone {
		it.ts.Stale = older
		err = r.sink.Tombstone(ctx, it.ts)
	} else {
		it.bom.Superseded = older
		err = r.sink.Export(ctx, it.bom)
	}
	r.m.exportSeconds.Observe(time.Since(start).Seconds())
	return err
}

func (r *Runner) cached(key string) cached {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.view[key]
}

// newestOf is the newest change applied to a workload called name (any
// uid), as far as the ledger in this process knows.
func (r *Runner) newestOf(name string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.names[name]
}

// remember puts c in the view of the ledger, under key.
func (r *Runner) remember(key string, c cached) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.view[key] = c
	if c.e.Workload != "" && c.e.ChangeSeq > r.names[c.e.Workload] {
		r.names[c.e.Workload] = c.e.ChangeSeq
	}
}

// record moves the workload's ledger entry forward to it, with a
// conditional put: when another process wrote the entry since it was read,
// the entry is read again, and kept when it is already at or past it.
func (r *Runner) record(ctx context.Context, key string, it item) error {
	next := it.entry()
	value, _ := json.Marshal(next)
	for attempt := 0; ; attempt++ {
		cur := r.cached(key)
		if cur.e.ChangeSeq > it.changeSeq {
			return nil // a replay of an older version: the ledger never goes back
		}
		rev, err := r.ledger.Put(ctx, key, value, cur.rev)
		if err == nil {
			r.remember(key, cached{e: next, rev: rev})
			return nil
		}
		if !errors.Is(err, ledger.ErrConflict) || attempt >= 5 {
			return fmt.Errorf("record %s in the ledger: %w", it.workload, err)
		}
		raw, rev, ok, gerr := r.ledger.Get(ctx, key)
		if gerr != nil {
			return fmt.Errorf("record %s in the ledger: %w", it.workload, gerr)
		}
		var e entry
		if ok {
			_ = json.Unmarshal(raw, &e) // unreadable: overwritten
		}
		r.remember(key, cached{e: e, rev: rev})
	}
}

// superseded reports whether BOMS already holds a newer version of the
// workload than changeSeq: a latest-only sink then skips this one.
func (r *Runner) superseded(ctx context.Context, subject string, changeSeq uint64) (bool, error) {
	last, ok, err := bomlog.New(r.bus).Last(ctx, subject)
	if err != nil {
		return false, fmt.Errorf("latest-only check: %w", err)
	}
	if !ok {
		return false, nil
	}
	return last.ChangeSeq > changeSeq, nil // unreadable: 0, not newer
}

// ReplayOptions choose what a replay re-drives.
type ReplayOptions struct {
	// StartSeq or StartTime: where on BOMS to begin; zero means the first message.
	StartSeq  uint64
	StartTime time.Time
	// IgnoreLedger exports every version again, whatever the ledger says:
	// to rebuild a store that was wiped. The ledger still never goes back.
	IgnoreLedger bool
}

// Progress is told how far a replay is: messages done of total, and the
// rate in messages per second.
type Progress func(done, total uint64, rate float64)

// Replay re-drives the sink over BOMS from opts' start up to the last
// message present when it begins, through an ordered consumer, with the same
// steps and the same ledger as Run: what the ledger holds is skipped (unless
// IgnoreLedger), so a replay into the same sink writes nothing twice, while a
// sink under a new name receives every BOM once. Failures go to the
// dead-letter stream as in Run. It may run while Run does, in the same
// process: the two never handle one workload at once. It returns the
// replay's own Stats.
func (r *Runner) Replay(ctx context.Context, opts ReplayOptions, progress Progress) (Stats, error) {
	var n counters
	ec := r.engineConfig(r.cfg.Config)
	eng, err := engine.New(r.bus, ec, r.handler(opts.IgnoreLedger, &n), r.log.With(zap.Bool("replay", true)), nil)
	if err != nil {
		return Stats{}, fmt.Errorf("replay %s: %w", r.name, err)
	}
	start := time.Now()
	var last time.Time
	_, err = eng.Replay(ctx, opts.StartSeq, opts.StartTime, func(done, total uint64) {
		if progress == nil {
			return
		}
		now := time.Now()
		if done != total && now.Sub(last) < 500*time.Millisecond {
			return
		}
		last = now
		progress(done, total, float64(done)/max(now.Sub(start).Seconds(), 1e-9))
	})
	st := stats(&n, eng)
	if err != nil {
		return st, err
	}
	r.log.Info("replay done", zap.Any("stats", st))
	return st, nil
}

// Retry puts one dead letter of this sink back through it: a redrive
// through the sink's engine (see engine.Engine.Redrive), with the same
// steps as Run: a version the ledger holds already (or a newer one) is
// skipped, which counts as done.
func (r *Runner) Retry(ctx context.Context, d deadletter.Letter) (engine.Redriven, error) {
	return r.eng.Redrive(ctx, d)
}
