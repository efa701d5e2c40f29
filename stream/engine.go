package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Handler processes one message for a stage. It returns nil when the
// message is done, and the engine acknowledges it. An error whose chain holds
// a Permanent() bool method that returns true (sinks.Permanent, stream.Permanent)
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
	bus *Bus
	cfg EngineConfig
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
func (b *Bus) NewEngine(cfg EngineConfig, h Handler, log *zap.Logger, reg prometheus.Registerer) (*Engine, error) {
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
	e := &Engine{bus: b, cfg: cfg.withDefaults(), h: h, log: log.With(zap.String("stage", cfg.Stage)), m: m, seed: maphash.MakeSeed()}
	e.health.set(StateStopped, "not started")
	return e, nil
}

// Config returns the engine's configuration with its defaults applied.
func (e *Engine) Config() EngineConfig { return e.cfg }

// pinGroup is the priority group of every engine consumer: the server pins
// the consumer to one client at a time, so that two replicas of a stage never
// hold messages of one workload at once; another replica takes over when the
// pinned one stops pulling for PinnedTTL.
const pinGroup = "bomstream"

// pinnedTTL is how long a silent client stays pinned: longer than AckWait,
// so that when another replica takes over, what the silent one held is
// already due for redelivery and comes before newer messages.
func (c EngineConfig) pinnedTTL() time.Duration { return c.AckWait + 5*time.Second }

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
	s, err := e.bus.stream(ctx, e.cfg.Stream)
	if err != nil {
		return err
	}
	return s.UnpinConsumer(ctx, e.cfg.Durable, pinGroup)
}

// ensureConsumer creates the consumer, or updates an existing one while
// keeping its start position (which the server cannot change). created says
// whether it did not exist.
func (e *Engine) ensureConsumer(ctx context.Context) (cons jetstream.Consumer, created bool, err error) {
	s, err := e.bus.stream(ctx, e.cfg.Stream)
	if err != nil {
		return nil, false, err
	}
	cc := e.consumerConfig()
	existing, err := s.Consumer(ctx, e.cfg.Durable)
	switch {
	case err == nil:
		old := existing.CachedInfo().Config
		cc.DeliverPolicy, cc.OptStartSeq, cc.OptStartTime = old.DeliverPolicy, old.OptStartSeq, old.OptStartTime
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		created = true
	default:
		return nil, false, fmt.Errorf("consumer %s on %s: %w", e.cfg.Durable, e.cfg.Stream, err)
	}
	cons, err = s.CreateOrUpdateConsumer(ctx, cc)
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
		last, err := e.bus.LastSeq(ctx, e.cfg.Stream)
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

// source is where an engine's messages come from: a durable consumer (with
// acks) or, for a replay, an ordered consumer (without).
type source interface {
	next(ctx context.Context) (jetstream.Msg, error)
	acks() bool
	stop()
}

type durableSource struct{ it jetstream.MessagesContext }

func (s *durableSource) next(ctx context.Context) (jetstream.Msg, error) {
	return s.it.Next(jetstream.NextContext(ctx))
}
func (s *durableSource) acks() bool { return true }
func (s *durableSource) stop()      { s.it.Stop() }

// consume dispatches messages from src to per-subject queues until ctx is
// done, src fails for good, or (limit > 0) limit messages were taken; then
// it stops src, hands back what was not started, waits for the calls in
// progress, and returns.
func (e *Engine) consume(ctx context.Context, src source, limit uint64, onDone func()) error {
	// The source failing for good (the connection closed, the consumer
	// deleted) ends the call as a cancellation does: queued messages are
	// handed back rather than worked on, as they could not be acked.
	ctx, abandon := context.WithCancel(ctx)
	defer abandon()
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(e.cfg.DrainTimeout, cancelWork)
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopDrain()

	d := newDispatcher(e, src.acks(), ctx, work)
	d.onDone = onDone
	go d.keepAlive()
	var runErr error
	for n := uint64(0); limit == 0 || n < limit; n++ {
		if !d.acquire(ctx) {
			break
		}
		msg, err := src.next(ctx)
		if ctx.Err() != nil {
			d.release()
			if msg != nil && src.acks() {
				_ = msg.Nak()
			}
			break
		}
		if err != nil {
			d.release()
			if errors.Is(err, errRangeEnd) {
				break
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
				errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				runErr = fmt.Errorf("consume %s on %s: %w", e.cfg.Durable, e.cfg.Stream, err)
				abandon()
				break
			}
			// Missed heartbeats, a reconnect: the iterator recovers by itself.
			e.health.set(StateDown, "fetch: "+err.Error())
			e.m.up.Set(0)
			e.log.Warn("fetch", zap.Error(err))
			if !sleep(ctx, time.Second) {
				break
			}
			n-- // nothing was taken
			continue
		}
		e.m.up.Set(1)
		if e.health.state() == StateDown {
			e.health.set(StateUp, "")
		}
		d.dispatch(msg)
	}
	src.stop()
	d.close()
	return runErr
}

// dispatcher holds the messages of one consume call: a bounded set of
// deliveries, queued per subject, each subject drained by one goroutine at a
// time.
type dispatcher struct {
	e          *Engine
	withAcks   bool
	stop, work context.Context
	slots      chan struct{} // one per message held, MaxInFlight in all
	calls      chan struct{} // one per handler call running, Concurrency in all
	wg         sync.WaitGroup
	done       chan struct{}
	onDone     func() // called after each message settles, when set

	mu     sync.Mutex
	queues map[string]*subjectQueue
	held   map[*delivery]struct{}
}

type subjectQueue struct {
	msgs []*delivery
}

// delivery is one message in the engine's hands.
type delivery struct {
	msg       jetstream.Msg
	meta      *jetstream.MsgMetadata
	touched   time.Time // last time its ack deadline was reset
	touchedMu sync.Mutex
}

func newDispatcher(e *Engine, withAcks bool, stop, work context.Context) *dispatcher {
	return &dispatcher{
		e: e, withAcks: withAcks, stop: stop, work: work,
		slots:  make(chan struct{}, e.cfg.MaxInFlight),
		calls:  make(chan struct{}, e.cfg.Concurrency),
		done:   make(chan struct{}),
		queues: make(map[string]*subjectQueue),
		held:   make(map[*delivery]struct{}),
	}
}

func (d *dispatcher) acquire(ctx context.Context) bool {
	select {
	case d.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (d *dispatcher) release() { <-d.slots }

// dispatch queues msg behind the messages of its subject.
func (d *dispatcher) dispatch(msg jetstream.Msg) {
	dl := &delivery{msg: msg, touched: time.Now()}
	subj := msg.Subject()
	d.mu.Lock()
	d.held[dl] = struct{}{}
	q, active := d.queues[subj]
	if !active {
		q = &subjectQueue{}
		d.queues[subj] = q
	}
	q.msgs = append(q.msgs, dl)
	d.mu.Unlock()
	d.e.m.inFlight.Inc()
	if !active {
		d.wg.Add(1)
		go d.drain(subj, q)
	}
}

// drain handles the messages of one subject in order until none is left,
// holding the engine's lock of the subject (see Redrive).
func (d *dispatcher) drain(subj string, q *subjectQueue) {
	defer d.wg.Done()
	l, _ := d.e.subjects.lock(context.Background(), subj)
	defer d.e.subjects.unlock(subj, l)
	for {
		d.mu.Lock()
		if len(q.msgs) == 0 {
			delete(d.queues, subj)
			d.mu.Unlock()
			return
		}
		dl := q.msgs[0]
		q.msgs[0] = nil
		q.msgs = q.msgs[1:]
		d.mu.Unlock()
		d.handle(dl)
		d.mu.Lock()
		delete(d.held, dl)
		d.mu.Unlock()
		d.e.m.inFlight.Dec()
		d.release()
		if d.onDone != nil {
			d.onDone()
		}
	}
}

// close waits for every queued message to be handled (or handed back, once
// stop is done) and stops the keep-alive loop.
func (d *dispatcher) close() {
	d.wg.Wait()
	close(d.done)
}

// keepAlive resets the ack deadline of every message held longer than half
// of AckWait, until close.
func (d *dispatcher) keepAlive() {
	if !d.withAcks {
		return
	}
	every := max(d.e.cfg.AckWait/4, 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case now := <-t.C:
			var due []*delivery
			d.mu.Lock()
			for dl := range d.held {
				dl.touchedMu.Lock()
				if now.Sub(dl.touched) >= d.e.cfg.AckWait/2 {
					dl.touched = now
					due = append(due, dl)
				}
				dl.touchedMu.Unlock()
			}
			d.mu.Unlock()
			for _, dl := range due {
				if err := dl.msg.InProgress(); err != nil {
					d.e.log.Debug("in-progress ack", zap.Error(err))
				}
			}
		}
	}
}

// handle takes one delivery to exactly one end: acked, dead-lettered and
// terminated, or handed back (Nak) because the engine stops or the
// dead-letter stream cannot be written.
func (d *dispatcher) handle(dl *delivery) {
	e := d.e
	msg := dl.msg
	if d.stop.Err() != nil {
		d.nak(msg, 0)
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		e.log.Error("message without jetstream metadata", zap.String("subject", msg.Subject()), zap.Error(err))
		d.term(msg)
		return
	}
	dl.meta = meta
	m := &Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data(), Seq: meta.Sequence.Stream,
		Delivered: meta.NumDelivered, Time: meta.Timestamp}
	m.Redelivered = m.Delivered > 1 || m.Seq <= e.recovered.Load()
	if d.withAcks && meta.NumDelivered > uint64(e.cfg.MaxDeliver) {
		reason := fmt.Sprintf("poison: delivered %d times without being settled (a stage crashed, hung or timed out while holding it); not worked on again", meta.NumDelivered)
		d.deadLetter(dl, m, reason)
		return
	}
	if d.withAcks && e.journal != nil && m.Seq <= e.recovered.Load() {
		n, err := e.journal.begin(d.work, m.Seq)
		if err != nil {
			e.log.Warn("crash journal", zap.Uint64("seq", m.Seq), zap.Error(err))
		}
		defer e.journal.end(m.Seq)
		if n > e.cfg.MaxDeliver {
			reason := fmt.Sprintf("poison: the stage stopped without settling it %d times (it crashed while working on it); not worked on again", n)
			d.deadLetter(dl, m, reason)
			return
		}
	}
	if meta.NumDelivered > 1 {
		e.m.redeliveries.Inc()
		e.n.redeliveries.Add(1)
	}
	var failingSince time.Time
	for attempt := 1; ; attempt++ {
		m.Attempt = attempt
		start := time.Now()
		err := d.call(m)
		if errors.Is(err, errStopping) {
			if !failingSince.IsZero() {
				e.health.recovered(m.Subject)
			}
			d.nak(msg, 0)
			return
		}
		e.m.seconds.Observe(time.Since(start).Seconds())
		if err == nil {
			if !failingSince.IsZero() {
				e.health.recovered(m.Subject)
			}
			e.m.handled.WithLabelValues("ok").Inc()
			e.n.ok.Add(1)
			d.ack(msg)
			return
		}
		if IsPermanent(err) {
			if !failingSince.IsZero() {
				e.health.recovered(m.Subject)
			}
			d.deadLetter(dl, m, err.Error())
			return
		}
		if e.cfg.MaxAttempts > 0 && attempt >= e.cfg.MaxAttempts {
			if !failingSince.IsZero() {
				e.health.recovered(m.Subject)
			}
			d.deadLetter(dl, m, fmt.Sprintf("after %d attempts: %v", attempt, err))
			return
		}
		if d.stop.Err() != nil {
			if !failingSince.IsZero() {
				e.health.recovered(m.Subject)
			}
			d.nak(msg, 0)
			return
		}
		if failingSince.IsZero() {
			failingSince = start
		}
		e.m.retries.Inc()
		e.n.retries.Add(1)
		wait := backoff(e.cfg.BaseBackoff, e.cfg.MaxBackoff, attempt)
		if attempt >= degradedAfter {
			e.health.failing(m.Subject, e.bus.redact(err.Error()), failingSince)
		}
		log := e.log.Warn
		if attempt > 3 && attempt%10 != 0 {
			log = e.log.Debug // a long outage logs every tenth attempt
		}
		log("transient failure, retrying", zap.String("subject", m.Subject), zap.Uint64("seq", m.Seq),
			zap.Int("attempt", attempt), zap.Duration("backoff", wait), zap.String("error", e.bus.redact(err.Error())))
		if !sleep(d.stop, wait) {
			e.health.recovered(m.Subject)
			d.nak(msg, 0)
			return
		}
	}
}

// degradedAfter is the attempt from which a failing message marks its stage
// degraded.
const degradedAfter = 3

// abandonGrace is how long a handler call may run past its deadline before
// the engine gives up waiting for it.
const abandonGrace = 2 * time.Second

// call runs the handler once (see invoke) in a slot of Concurrency; an
// abandoned call gives its slot back.
func (d *dispatcher) call(m *Msg) error {
	e := d.e
	select {
	case d.calls <- struct{}{}:
	case <-d.stop.Done():
		return errStopping // not started: handed back
	}
	if d.stop.Err() != nil {
		<-d.calls
		return errStopping
	}
	defer func() { <-d.calls }()
	return e.invoke(d.work, m)
}

// invoke runs the handler once on m with the attempt timeout, under work. A
// panic is a permanent error; a call that does not return
// AttemptTimeout+abandonGrace after it started is abandoned (it may still
// finish in the background).
func (e *Engine) invoke(work context.Context, m *Msg) error {
	ctx, cancel := context.WithTimeout(work, e.cfg.AttemptTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				e.log.Error("handler panicked", zap.String("subject", m.Subject), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
				done <- Permanent(fmt.Errorf("handler panicked: %v", r))
			}
		}()
		done <- e.h(ctx, m)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	e.abandoned.Add(1)
	e.m.abandoned.Inc()
	go func() { <-done; e.abandoned.Add(-1) }()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w within %s", ErrAttemptTimeout, e.cfg.AttemptTimeout)
	}
	return fmt.Errorf("%w: %w", ErrAttemptTimeout, ctx.Err())
}

// deadLetter parks the message on the stage's dead-letter subject with the
// reason, then terminates it. When that fails the message is handed back for
// a later redelivery: it is never dropped.
func (d *dispatcher) deadLetter(dl *delivery, m *Msg, reason string) {
	e := d.e
	reason = e.bus.redact(reason)
	_, err := e.bus.deadLetter(d.work, e.cfg.Stage, e.cfg.Stream, m, reason, DeadLetterID(e.cfg.Stage, e.cfg.Stream, m.Seq))
	if err != nil {
		e.log.Error("dead-letter publish failed; the message will be redelivered", zap.String("subject", m.Subject),
			zap.Uint64("seq", m.Seq), zap.String("reason", reason), zap.Error(err))
		d.nak(dl.msg, backoff(e.cfg.BaseBackoff, e.cfg.MaxBackoff, 4))
		return
	}
	e.m.handled.WithLabelValues("dead-lettered").Inc()
	e.n.dlq.Add(1)
	e.log.Error("dead-lettered", zap.String("subject", m.Subject), zap.Uint64("seq", m.Seq), zap.String("reason", reason))
	d.term(dl.msg)
}

func (d *dispatcher) ack(msg jetstream.Msg) {
	if !d.withAcks {
		return
	}
	if err := msg.Ack(); err != nil {
		d.e.log.Warn("ack", zap.Error(err))
	}
}

func (d *dispatcher) term(msg jetstream.Msg) {
	if !d.withAcks {
		return
	}
	if err := msg.Term(); err != nil {
		d.e.log.Warn("term", zap.Error(err))
	}
}

func (d *dispatcher) nak(msg jetstream.Msg, delay time.Duration) {
	if !d.withAcks {
		return
	}
	var err error
	if delay > 0 {
		err = msg.NakWithDelay(delay)
	} else {
		err = msg.Nak()
	}
	if err != nil {
		d.e.log.Debug("nak", zap.Error(err))
	}
}

// backoff is exponential with full jitter: uniform in [0, min(max, base·2^(n-1))].
func backoff(base, ceiling time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n <= 32 {
		if d := base << (n - 1); d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// sleep waits d or until ctx is done; it reports whether the full d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// orderedSource reads a range of a stream through an ordered consumer:
// nothing to acknowledge, nothing left on the server. It ends at the
// message stored at end, or earlier when the server says nothing is left
// (the range shrank under it: limits, a purge). The server's pending counts
// are not trusted further: over a store that lost messages they can count
// messages that will never come.
type orderedSource struct {
	it    jetstream.MessagesContext
	end   uint64
	ended bool
}

// errRangeEnd ends a replay at the end of its range.
var errRangeEnd = errors.New("end of the replayed range")

func (s *orderedSource) next(ctx context.Context) (jetstream.Msg, error) {
	if s.ended {
		return nil, errRangeEnd
	}
	msg, err := s.it.Next(jetstream.NextContext(ctx))
	if err == nil {
		if md, merr := msg.Metadata(); merr == nil {
			switch seq := md.Sequence.Stream; {
			case seq > s.end: // appended after the replay began
				s.ended = true
				return nil, errRangeEnd
			case seq == s.end || md.NumPending == 0:
				s.ended = true
			}
		}
	}
	return msg, err
}
func (s *orderedSource) acks() bool { return false }
func (s *orderedSource) stop()      { s.it.Stop() }

// Replay drives the engine's handler over the messages of its stream and
// filter stored from startSeq or startTime (both zero: the first message)
// up to the last one present when it begins, through an ordered consumer,
// with the same per-subject order, retries, timeouts and dead-letter path as
// Run; nothing is acknowledged and the durable consumer is not touched.
// progress (may be nil) is called after each message with the count done
// and the total. It returns once every message was handled (or handed up:
// ctx ended), with the count handled.
func (e *Engine) Replay(ctx context.Context, startSeq uint64, startTime time.Time, progress func(done, total uint64)) (uint64, error) {
	s, err := e.bus.stream(ctx, e.cfg.Stream)
	if err != nil {
		return 0, err
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: []string{e.cfg.Filter}}
	switch {
	case startSeq != 0:
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, startSeq
	case !startTime.IsZero():
		t := startTime
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	end, err := e.bus.lastStored(ctx, s, e.cfg.Filter)
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	cons, err := s.OrderedConsumer(ctx, occ)
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	total := info.NumPending
	if total == 0 || end == 0 || startSeq > end {
		if progress != nil {
			progress(0, 0)
		}
		return 0, nil
	}
	e.bus.warnLost(ctx, e.cfg.Stream, startSeq, end, "the replay of "+e.cfg.Stage)
	it, err := cons.Messages(jetstream.PullMaxMessages(min(e.cfg.MaxInFlight, 512)))
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	var done atomic.Uint64
	var mu sync.Mutex
	err = e.consume(ctx, &orderedSource{it: it, end: end}, 0, func() {
		n := done.Add(1)
		if progress != nil {
			mu.Lock()
			progress(n, max(total, n))
			mu.Unlock()
		}
	})
	if err == nil {
		err = ctx.Err()
	}
	n := done.Load()
	if err != nil {
		return n, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	if progress != nil && n != total {
		progress(n, n) // the server's count was off: the store lost messages
	}
	return n, nil
}
