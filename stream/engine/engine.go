package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// Handler processes one message for a stage. It returns nil when the
// message is done, and the engine acknowledges it. An error whose chain holds
// a Permanent() bool method that returns true (Permanent, which sinks.Permanent is)
// sends the message to the dead-letter stream at once; any other error is
// retried in process with backoff, while the later messages of the same
// subject (workload) wait behind it. ctx ends at the attempt timeout or when
// the engine stops. The engine calls a Handler concurrently for different
// subjects and never for two messages of one subject at once.
type Handler func(ctx context.Context, m *Msg) error

// Msg is one message handed to a Handler.
type Msg struct {
	Subject string
	Header  nats.Header
	Data    []byte
	// Seq is the message's stream sequence.
	Seq uint64
	// Delivered counts the server's deliveries of the message, 1 the first
	// time; more means an earlier holder did not settle it (a crash, a
	// timeout, a redelivery).
	Delivered uint64
	// Attempt counts the handler calls within this delivery, from 1.
	Attempt int
	// Redelivered says an earlier holder may have handled the message
	// already: the server delivered it before, or the engine rewound the
	// consumer after a crash, or created it again over a stream with
	// history. Handlers with side effects beyond their idempotent store
	// check what they did before.
	Redelivered bool
	// Time is when the stream stored the message.
	Time time.Time
}

// permanent is an error that no retry can cure.
type permanent struct{ err error }

func (p permanent) Error() string   { return p.err.Error() }
func (p permanent) Unwrap() error   { return p.err }
func (p permanent) Permanent() bool { return true }

// Permanent marks err as one that no retry can cure: the engine
// dead-letters the message at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err's chain holds an error with a
// Permanent() bool method that returns true.
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// errStopping: the engine stopped before a handler call could start.
var errStopping = errors.New("engine stopping")

// ErrAttemptTimeout is the failure of a handler call that outlived the
// engine's attempt timeout and was abandoned.
var ErrAttemptTimeout = errors.New("attempt timed out: the handler did not return")

// Engine consumes one durable consumer for one stage; see the package
// documentation and docs/ARCHITECTURE.md (The consume engine).
type Engine struct {
	bus *stream.Bus
	dlq dlqStore
	cfg Config
	h   Handler
	log *zap.Logger
	m   *engineMetrics

	health health
	seed   maphash.Seed

	// abandoned counts handler calls given up on that have not returned yet.
	abandoned atomic.Int64
	n         engineCounts
	// recovered: messages at or below this sequence may have been handled
	// by an earlier holder (see Msg.Redelivered); journal counts, for the
	// ones the engine rewound after a crash, how often work on them began.
	recovered atomic.Uint64
	journal   *journal
	// subjects serialises the work on one subject across consume calls
	// and redrives.
	subjects subjectLocks
}

// dlqStore is what the engine needs of the DLQ: park a message it gave
// up on, and take a redriven one off (a deadletter.Store).
type dlqStore interface {
	Put(ctx context.Context, d deadletter.Letter, msgID string) (uint64, error)
	Remove(ctx context.Context, id uint64) error
}

// Counts are what an engine did since it was made.
type Counts struct {
	OK           uint64 // handled and acknowledged
	DeadLettered uint64 // parked on the dead-letter stream
	Retries      uint64 // failed handler calls that were tried again
	Redeliveries uint64 // messages an earlier holder had not settled
}

type engineCounts struct{ ok, dlq, retries, redeliveries atomic.Uint64 }

// Counts returns what the engine did so far. Safe to call at any time.
func (e *Engine) Counts() Counts {
	return Counts{OK: e.n.ok.Load(), DeadLettered: e.n.dlq.Load(), Retries: e.n.retries.Load(), Redeliveries: e.n.redeliveries.Load()}
}

// NewEngine checks cfg and prepares an engine; nothing touches the server
// before Run. Metrics are registered on reg (nil: none); engines of several
// stages share one registry.
func New(b *stream.Bus, cfg Config, h Handler, log *zap.Logger, reg prometheus.Registerer) (*Engine, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("engine %s: no handler", cfg.Stage)
	}
	if log == nil {
		log = zap.NewNop()
	}
	m, err := newEngineMetrics(reg, cfg.Stage)
	if err != nil {
		return nil, fmt.Errorf("engine %s: metrics: %w", cfg.Stage, err)
	}
	e := &Engine{bus: b, dlq: deadletter.New(b), cfg: cfg.withDefaults(), h: h, log: log.With(zap.String("stage", cfg.Stage)), m: m, seed: maphash.MakeSeed()}
	e.health.set(StateStopped, "not started")
	return e, nil
}

// Config returns the engine's configuration with its defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// pinGroup is the priority group of every engine consumer: the server pins
// the consumer to one client at a time, so that two replicas of a stage never
// hold messages of one workload at once; another replica takes over when the
// pinned one stops pulling for PinnedTTL.
const pinGroup = "bomstream"

// pinnedTTL is how long a silent client stays pinned: longer than AckWait,
// so that when another replica takes over, what the silent one held is
// already due for redelivery and comes before newer messages.
func (c Config) pinnedTTL() time.Duration { return c.AckWait + 5*time.Second }

// consumerConfig is the server-side configuration of the engine's consumer.
func (e *Engine) consumerConfig() jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Durable:        e.cfg.Durable,
		Description:    e.cfg.Description,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        e.cfg.AckWait,
		MaxDeliver:     -1, // the engine dead-letters at MaxDeliver itself: the server would drop silently
		MaxAckPending:  e.cfg.MaxInFlight,
		FilterSubject:  e.cfg.Filter,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{pinGroup},
		PinnedTTL:      e.cfg.pinnedTTL(),
	}
	switch {
	case e.cfg.StartSeq != 0:
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, e.cfg.StartSeq
	case !e.cfg.StartTime.IsZero():
		t := e.cfg.StartTime
		cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	default:
		cc.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	return cc
}

// unpin releases the consumer's pin, whoever holds it.
func (e *Engine) unpin(ctx context.Context) error {
	s, err := e.bus.Stream(ctx, e.cfg.Stream)
	if err != nil {
		return err
	}
	return e.bus.Retry(ctx, true, func(ctx context.Context) error {
		return s.UnpinConsumer(ctx, e.cfg.Durable, pinGroup)
	})
}

// ensureConsumer creates the consumer, or updates an existing one while
// keeping its start position (which the server cannot change). created says
// whether it did not exist.
func (e *Engine) ensureConsumer(ctx context.Context) (cons jetstream.Consumer, created bool, err error) {
	s, err := e.bus.Stream(ctx, e.cfg.Stream)
	if err != nil {
		return nil, false, err
	}
	cc := e.consumerConfig()
	// Both requests ride through a leader election (bus.Retry): asking
	// twice is harmless, and so is creating or updating twice to one
	// configuration.
	var existing jetstream.Consumer
	err = e.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		existing, err = s.Consumer(ctx, e.cfg.Durable)
		return err
	})
	switch {
	case err == nil:
		old := existing.CachedInfo().Config
		cc.DeliverPolicy, cc.OptStartSeq, cc.OptStartTime = old.DeliverPolicy, old.OptStartSeq, old.OptStartTime
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		created = true
	default:
		return nil, false, fmt.Errorf("consumer %s on %s: %w", e.cfg.Durable, e.cfg.Stream, err)
	}
	err = e.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		cons, err = s.CreateOrUpdateConsumer(ctx, cc)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("consumer %s on %s: %w", e.cfg.Durable, e.cfg.Stream, err)
	}
	return cons, created, nil
}

// Run consumes until ctx is done. When the consumer is deleted under it or
// the connection drops, it reports itself down, waits with backoff, and
// creates the consumer again (from the first message: the stages' own
// dedupe makes that safe). On cancellation it stops fetching, hands back the
// messages it had not started (Nak), lets the calls in progress finish
// within DrainTimeout, and returns nil.
func (e *Engine) Run(ctx context.Context) error {
	for n := 1; ; n++ {
		err := e.runOnce(ctx)
		if ctx.Err() != nil {
			e.health.set(StateStopped, "stopped")
			return nil
		}
		d := backoff(e.cfg.BaseBackoff, e.cfg.MaxBackoff, min(n, 8))
		e.health.set(StateDown, err.Error())
		e.m.up.Set(0)
		e.log.Warn("consumer lost; setting it up again", zap.Duration("in", d), zap.Error(err))
		if !sleep(ctx, d) {
			e.health.set(StateStopped, "stopped")
			return nil
		}
	}
}

func (e *Engine) runOnce(ctx context.Context) error {
	cons, created, err := e.ensureConsumer(ctx)
	if err != nil {
		return err
	}
	switch {
	case created:
		e.log.Info("consumer created", zap.String("durable", e.cfg.Durable), zap.String("stream", e.cfg.Stream))
		last, err := e.bus.Reader().LastSeq(ctx, e.cfg.Stream)
		if err != nil {
			return err
		}
		e.recovered.Store(last)
	case e.cfg.Claim:
		if err := e.claim(ctx, cons); err != nil {
			return err
		}
	}
	it, err := cons.Messages(
		jetstream.PullMaxMessages(min(e.cfg.MaxInFlight, 512)),
		jetstream.PullPriorityGroup(pinGroup),
		jetstream.PullExpiry(5*time.Second),
	)
	if err != nil {
		return fmt.Errorf("consume %s on %s: %w", e.cfg.Durable, e.cfg.Stream, err)
	}
	src := &durableSource{it: it}
	e.health.set(StateUp, "")
	e.m.up.Set(1)
	err = e.consume(ctx, src, 0, nil)
	if ctx.Err() != nil {
		// A clean stop: the next holder (a restart, another replica) need
		// not wait for the pin to expire.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = e.unpin(uctx)
		cancel()
	}
	if err == nil && ctx.Err() == nil {
		err = errors.New("message iterator ended")
	}
	return err
}
