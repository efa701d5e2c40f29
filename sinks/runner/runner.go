package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream"
)

// Runner drives one sink from its durable consumer on BOMS.
type Runner struct {
	bus *stream.Bus
	e   *engine
}

// New checks cfg and prepares a runner for s: it opens the sink's ledger and
// the BOMS stream, and registers the sink's metrics on reg (nil: none). The
// consumer is created or updated by Run.
func New(bus *stream.Bus, s sinks.Sink, cfg Config, log *zap.Logger, reg prometheus.Registerer) (*Runner, error) {
	if err := sinks.ValidateName(s.Name()); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sink %s: %w", s.Name(), err)
	}
	cfg = cfg.withDefaults(s.Name())
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("sink", s.Name()))
	m, err := newMetrics(reg, s.Name())
	if err != nil {
		return nil, fmt.Errorf("sink %s: metrics: %w", s.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := newEngine(ctx, bus, s, cfg, log, m, true)
	if err != nil {
		return nil, err
	}
	return &Runner{bus: bus, e: e}, nil
}

// Stats returns what the runner has done so far. Safe to call at any time.
func (r *Runner) Stats() Stats { return r.e.n.snapshot() }

// Run consumes until ctx is done, then stops fetching, lets the messages in
// hand finish (at most DrainTimeout), hands queued ones back with Nak and
// returns nil. It returns an error when the consumer cannot be set up or the
// connection is closed under it. Run does not close the sink.
func (r *Runner) Run(ctx context.Context) error {
	e := r.e
	cons, err := r.consumer(ctx)
	if err != nil {
		return err
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(2 * e.cfg.Concurrency))
	if err != nil {
		return fmt.Errorf("sink %s: consume %s: %w", e.name, e.cfg.Durable, err)
	}
	e.m.up.Set(1)
	defer e.m.up.Set(0)
	e.log.Info("sink runner started", zap.String("durable", e.cfg.Durable), zap.Bool("latestOnly", e.cfg.LatestOnly))

	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(e.cfg.DrainTimeout, cancelWork)
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopDrain()

	p := newPool(e.cfg.Concurrency, func(msg jetstream.Msg, release func()) {
		if ctx.Err() != nil {
			e.nak(msg, 0)
			release()
			return
		}
		_ = e.handle(ctx, work, msg, release)
	})
	var runErr error
	for {
		msg, err := iter.Next(jetstream.NextContext(ctx))
		if ctx.Err() != nil {
			if msg != nil {
				e.nak(msg, 0)
			}
			break
		}
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) {
				runErr = fmt.Errorf("sink %s: consume %s: %w", e.name, e.cfg.Durable, err)
				break
			}
			// Missed heartbeats, a reconnect: the iterator recovers.
			e.m.up.Set(0)
			e.log.Warn("fetch", zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		e.m.up.Set(1)
		p.submit(msg)
	}
	// Hand back what the iterator still buffers, then what the workers queue.
	iter.Drain()
	for {
		msg, err := iter.Next(jetstream.NextMaxWait(time.Second))
		if err != nil {
			break
		}
		e.nak(msg, 0)
	}
	p.close()
	e.log.Info("sink runner stopped", zap.Any("stats", r.Stats()))
	return runErr
}

// consumer creates the durable consumer, or updates an existing one while
// keeping its start position (which the server cannot change).
func (r *Runner) consumer(ctx context.Context) (jetstream.Consumer, error) {
	e := r.e
	cc := jetstream.ConsumerConfig{
		Durable:       e.cfg.Durable,
		Description:   "bomstream sink " + e.name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       e.cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: 4 * e.cfg.Concurrency,
		FilterSubject: schemas.SubjectBOMsPrefix + ">",
	}
	setStart(&cc.DeliverPolicy, &cc.OptStartSeq, &cc.OptStartTime, e.cfg)
	if existing, err := e.boms.Consumer(ctx, e.cfg.Durable); err == nil {
		old := existing.CachedInfo().Config
		if old.DeliverPolicy != cc.DeliverPolicy || old.OptStartSeq != cc.OptStartSeq {
			e.log.Info("consumer exists: its start position is kept; use replay to re-drive history",
				zap.String("durable", e.cfg.Durable))
		}
		cc.DeliverPolicy, cc.OptStartSeq, cc.OptStartTime = old.DeliverPolicy, old.OptStartSeq, old.OptStartTime
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("sink %s: consumer %s: %w", e.name, e.cfg.Durable, err)
	}
	cons, err := e.boms.CreateOrUpdateConsumer(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("sink %s: consumer %s: %w", e.name, e.cfg.Durable, err)
	}
	return cons, nil
}

func setStart(policy *jetstream.DeliverPolicy, seq *uint64, at **time.Time, cfg Config) {
	switch {
	case cfg.StartSeq != 0:
		*policy, *seq = jetstream.DeliverByStartSequencePolicy, cfg.StartSeq
	case !cfg.StartTime.IsZero():
		t := cfg.StartTime
		*policy, *at = jetstream.DeliverByStartTimePolicy, &t
	default:
		*policy = jetstream.DeliverAllPolicy
	}
}

// pool runs n workers. Messages of one subject (one workload) are handled
// one at a time, in the order submitted; messages of different subjects go
// to whichever worker is free, so that a busy workload never holds back an
// idle worker.
//
// handle must call release exactly once, when it is done with the message;
// it may return before that and finish on another goroutine. A message
// counts against the pool's bound of 2n until released, and the next message
// of its subject may start as soon as handle returns.
type pool struct {
	handle func(msg jetstream.Msg, release func())
	ready  chan string   // subjects with queued messages and no worker on them
	slots  chan struct{} // bounds the messages submitted and not yet released
	mu     sync.Mutex
	queued map[string][]jetstream.Msg // subject -> messages not yet handled, oldest first
	wg     sync.WaitGroup
}

func newPool(n int, handle func(msg jetstream.Msg, release func())) *pool {
	p := &pool{
		handle: handle,
		ready:  make(chan string, 2*n),
		slots:  make(chan struct{}, 2*n),
		queued: make(map[string][]jetstream.Msg),
	}
	for range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for subj := range p.ready {
				p.drain(subj)
			}
		}()
	}
	return p
}

// submit queues msg behind the messages of its subject. It blocks while 2n
// messages are queued or not yet released.
func (p *pool) submit(msg jetstream.Msg) {
	p.slots <- struct{}{}
	subj := msg.Subject()
	p.mu.Lock()
	q, active := p.queued[subj]
	p.queued[subj] = append(q, msg)
	p.mu.Unlock()
	if !active {
		p.ready <- subj // never blocks: each subject waiting in ready holds one of the 2n slots
	}
}

// drain handles the messages of subj until none is left.
func (p *pool) drain(subj string) {
	for {
		p.mu.Lock()
		q := p.queued[subj]
		if len(q) == 0 {
			delete(p.queued, subj)
			p.mu.Unlock()
			return
		}
		msg := q[0]
		q[0] = nil
		p.queued[subj] = q[1:]
		p.mu.Unlock()
		p.handle(msg, p.release)
	}
}

func (p *pool) release() { <-p.slots }

// close waits until every queued message has been handled and released.
func (p *pool) close() {
	close(p.ready)
	p.wg.Wait()
	for range cap(p.slots) {
		p.slots <- struct{}{}
	}
}
