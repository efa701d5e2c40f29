package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer"
)

// Renderer turns one change event into a BOM; *transformer.Renderer satisfies it.
//
// Render must be deterministic (the same event gives the same bytes, so that
// redeliveries deduplicate), must not block on the network, and must be safe
// for concurrent use when Config.Concurrency > 1. A returned error is retried
// with backoff up to Config.MaxDeliver deliveries and then dead-lettered; a
// panic is dead-lettered at once. Errors must not carry secrets: they become
// the DLQ reason and log lines.
type Renderer interface {
	Render(ev schemas.WorkloadChange) (transformer.Result, error)
}

// Config tunes the stage. The zero value is usable.
type Config struct {
	// Durable is the name of the shared pull consumer on CHANGES.
	Durable string `json:"durable" yaml:"durable"`
	// MaxDeliver is how many deliveries an event gets before it is
	// dead-lettered (1 means no retry).
	MaxDeliver int `json:"maxDeliver" yaml:"maxDeliver"`
	// AckWait is how long the server waits for an ack before redelivering.
	AckWait time.Duration `json:"ackWait" yaml:"ackWait"`
	// Concurrency is how many events one Service renders at a time. Events
	// are spread over the renderers by subject, so that one replica still
	// handles each workload's events in CHANGES order.
	Concurrency int `json:"concurrency" yaml:"concurrency"`
	// MaxInFlight bounds the events one Service holds between fetch and ack:
	// queued, rendering, or with their BOM published and waiting for the
	// BOMS stream's ack. BOMs are published asynchronously, in order, and an
	// event is acked only once its publish is acked; MaxInFlight 1 publishes
	// and acks one event at a time. It also sizes the pull requests. Default
	// 256, and never below Concurrency.
	MaxInFlight int `json:"maxInFlight" yaml:"maxInFlight"`
	// Stage names the DLQ subject, bomstream.dlq.<stage>.
	Stage string `json:"stage" yaml:"stage"`
	// RetryDelay is the redelivery delay after a first failure; it doubles
	// with each delivery up to MaxRetryDelay.
	RetryDelay    time.Duration `json:"retryDelay" yaml:"retryDelay"`
	MaxRetryDelay time.Duration `json:"maxRetryDelay" yaml:"maxRetryDelay"`
}

// Defaults of the zero Config.
const (
	DefaultDurable       = "transformer"
	DefaultMaxDeliver    = 5
	DefaultAckWait       = 30 * time.Second
	DefaultConcurrency   = 1
	DefaultMaxInFlight   = 256
	DefaultStage         = "transformer"
	DefaultRetryDelay    = time.Second
	DefaultMaxRetryDelay = time.Minute
)

// Validate names the first field of every problem.
func (c Config) Validate() error {
	var errs []error
	if c.Durable != "" && !isToken(c.Durable) {
		errs = append(errs, fmt.Errorf("transformer.durable: %q is not a consumer name (no dots, spaces, * or >)", c.Durable))
	}
	if c.Stage != "" && !isToken(c.Stage) {
		errs = append(errs, fmt.Errorf("transformer.stage: %q is not one subject token", c.Stage))
	}
	if c.MaxDeliver < 0 {
		errs = append(errs, fmt.Errorf("transformer.maxDeliver: %d is negative", c.MaxDeliver))
	}
	if c.AckWait < 0 {
		errs = append(errs, fmt.Errorf("transformer.ackWait: %s is negative", c.AckWait))
	}
	if c.Concurrency < 0 || c.Concurrency > 256 {
		errs = append(errs, fmt.Errorf("transformer.concurrency: %d is outside 1..256", c.Concurrency))
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > maxInFlight {
		errs = append(errs, fmt.Errorf("transformer.maxInFlight: %d is outside 1..%d", c.MaxInFlight, maxInFlight))
	}
	if c.RetryDelay < 0 {
		errs = append(errs, fmt.Errorf("transformer.retryDelay: %s is negative", c.RetryDelay))
	}
	if c.MaxRetryDelay < 0 {
		errs = append(errs, fmt.Errorf("transformer.maxRetryDelay: %s is negative", c.MaxRetryDelay))
	}
	return errors.Join(errs...)
}

func isToken(s string) bool { return !strings.ContainsAny(s, ".*> \t\r\n") }

func (c Config) withDefaults() Config {
	if c.Durable == "" {
		c.Durable = DefaultDurable
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	c.MaxInFlight = max(c.MaxInFlight, c.Concurrency)
	if c.Stage == "" {
		c.Stage = DefaultStage
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.MaxRetryDelay == 0 {
		c.MaxRetryDelay = DefaultMaxRetryDelay
	}
	return c
}

// Service consumes CHANGES and publishes BOMS; see the package comment.
type Service struct {
	bus     *stream.Bus
	pub     jetstream.JetStream // for the BOM publishes, whose acks time out
	render  Renderer
	cfg     Config
	log     *zap.Logger
	metrics metrics
	running atomic.Bool
}

// How long one pull request waits for messages, and how long the work on one
// message may take once fetched (it is not cut short by cancelling Run).
const (
	fetchWait      = 5 * time.Second
	messageTimeout = 30 * time.Second
)

// maxInFlight bounds Config.MaxInFlight, below the client's default limit of
// async publishes awaiting their ack (4000); maxFetch bounds a pull request.
const (
	maxInFlight = 4000
	maxFetch    = 256
)

// New checks cfg and registers the metrics on reg (nil registers none).
// Nothing touches the server before Run.
func New(bus *stream.Bus, r Renderer, cfg Config, log *zap.Logger, reg prometheus.Registerer) (*Service, error) {
	if bus == nil || r == nil {
		return nil, errors.New("transformer service: bus and renderer are required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	pub, err := jetstream.New(bus.NC, jetstream.WithPublishAsyncTimeout(messageTimeout))
	if err != nil {
		return nil, fmt.Errorf("transformer publisher: %w", err)
	}
	s := &Service{bus: bus, pub: pub, render: r, cfg: cfg.withDefaults(), log: log, metrics: newMetrics()}
	if reg != nil {
		if err := s.metrics.register(reg); err != nil {
			return nil, fmt.Errorf("transformer metrics: %w", err)
		}
	}
	return s, nil
}

// Ready reports whether Run is consuming and the connection is up.
func (s *Service) Ready() bool {
	return s.running.Load() && s.bus.NC.Status() == nats.CONNECTED
}

// Run creates (or joins) the durable consumer and processes events until ctx
// is done. On cancellation it stops fetching, hands back the messages it
// fetched but had not started (Nak, for another replica), finishes the
// events in flight, and returns nil. It returns an error only when the
// consumer cannot be set up.
func (s *Service) Run(ctx context.Context) error {
	cfg := s.cfg
	cons, err := s.bus.JS.CreateOrUpdateConsumer(ctx, schemas.StreamChanges, jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		Description:   "bomstream transformer: renders CHANGES into BOMS",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		FilterSubject: schemas.SubjectChangesPrefix + ">",
	})
	if err != nil {
		return fmt.Errorf("transformer consumer %s on %s: %w", cfg.Durable, schemas.StreamChanges, err)
	}
	log := s.log.With(zap.String("consumer", cfg.Durable))
	log.Info("transformer consuming", zap.Int("concurrency", cfg.Concurrency), zap.Int("maxDeliver", cfg.MaxDeliver))
	s.running.Store(true)
	defer s.running.Store(false)

	// window holds one token per event between fetch and its ack; the
	// workers render in subject order and publish without waiting.
	window := make(chan struct{}, cfg.MaxInFlight)
	var inflight sync.WaitGroup
	work := context.WithoutCancel(ctx)
	workers := make([]chan jetstream.Msg, cfg.Concurrency)
	for i := range workers {
		ch := make(chan jetstream.Msg, 1)
		workers[i] = ch
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			for msg := range ch {
				if ctx.Err() != nil {
					_ = msg.Nak() // queued but not started: redeliver now, to another replica
					<-window
					continue
				}
				inflight.Add(1)
				s.handle(work, msg, func() { <-window; inflight.Done() })
			}
		}()
	}
	defer inflight.Wait()
	defer func() {
		for _, ch := range workers {
			close(ch)
		}
	}()
	batchSize := max(cfg.Concurrency, min(cfg.MaxInFlight, maxFetch))
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, fetchWait)
		batch, err := cons.Fetch(batchSize, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				break
			}
			log.Warn("fetch from CHANGES", zap.Error(err))
			sleep(ctx, time.Second)
			continue
		}
		for msg := range batch.Messages() {
			if !s.acquire(ctx, window) {
				_ = msg.Nak() // fetched but not started: redeliver now, to another replica
				continue
			}
			select {
			case workers[worker(msg.Subject(), len(workers))] <- msg:
			case <-ctx.Done():
				_ = msg.Nak()
				<-window
			}
		}
		cancel()
		if err := batch.Error(); err != nil && ctx.Err() == nil && !isIdle(err) {
			log.Warn("fetch from CHANGES", zap.Error(err))
			sleep(ctx, time.Second)
		}
	}
	log.Info("transformer stopping: finishing events in flight")
	return nil
}

// worker picks the renderer of a subject, so that one workload's events
// are rendered and published in the order they were fetched.
func worker(subject string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(subject))
	return int(h.Sum32() % uint32(n))
}

// acquire takes a token of the window, or reports false once ctx is done
// (checked first, so that no new work starts after cancellation).
func (s *Service) acquire(ctx context.Context, window chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case window <- struct{}{}:
		return true
	}
}

// isIdle reports a pull request that ended with no message to hand out.
func isIdle(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// permanent marks an error that no redelivery can cure.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// handle takes one message to exactly one of: ack, Nak with delay, or DLQ +
// Term, and then calls done. It returns once the message is rendered and its
// BOM handed to the connection; waiting for the publish ack and settling the
// message happen on another goroutine.
func (s *Service) handle(parent context.Context, msg jetstream.Msg, done func()) {
	ctx, cancel := context.WithTimeout(parent, messageTimeout)
	md, err := msg.Metadata()
	if err != nil { // not a JetStream delivery: nothing to retry
		s.log.Error("message without jetstream metadata", zap.String("subject", msg.Subject()), zap.Error(err))
		_ = msg.Term()
		cancel()
		done()
		return
	}
	changeSeq := md.Sequence.Stream
	// WithLazy: the fields are encoded only when a line is logged, which on
	// the normal path (Debug lines at Info level) is never.
	log := s.log.WithLazy(zap.String("subject", msg.Subject()), zap.Uint64("changeSeq", changeSeq), zap.Uint64("delivery", md.NumDelivered))

	pending, err := s.process(ctx, msg.Data(), changeSeq, log)
	if err != nil || pending == nil {
		s.settle(ctx, msg, md, err, log)
		cancel()
		done()
		return
	}
	go func() {
		defer done()
		defer cancel()
		s.settle(ctx, msg, md, pending.wait(ctx), log)
	}()
}

// settle acks, retries or dead-letters the message according to err, the
// outcome of processing it.
func (s *Service) settle(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, err error, log *zap.Logger) {
	var perm permanent
	switch {
	case err == nil:
		if err := msg.DoubleAck(ctx); err != nil {
			// The server redelivers; the dedupe ids make that harmless.
			log.Warn("ack change event", zap.Error(err))
		}
	case errors.As(err, &perm):
		s.deadLetter(ctx, msg, md, err, log)
	case md.NumDelivered >= uint64(s.cfg.MaxDeliver):
		s.deadLetter(ctx, msg, md, fmt.Errorf("after %d deliveries: %w", md.NumDelivered, err), log)
	default:
		s.metrics.retries.Inc()
		delay := s.backoff(md.NumDelivered)
		log.Warn("change event failed, will retry", zap.Duration("delay", delay), zap.Error(err))
		if err := msg.NakWithDelay(delay); err != nil {
			log.Warn("nak change event", zap.Error(err))
		}
	}
}

// backoff is RetryDelay doubled per delivery already made, capped.
func (s *Service) backoff(delivered uint64) time.Duration {
	d := s.cfg.RetryDelay
	for i := uint64(1); i < delivered && d < s.cfg.MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, s.cfg.MaxRetryDelay)
}

func (s *Service) deadLetter(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, cause error, log *zap.Logger) {
	if err := s.bus.DeadLetterMsg(ctx, s.cfg.Stage, msg, cause.Error()); err != nil {
		// Keep the event: it is redelivered while deliveries remain, and it
		// stays on CHANGES for a replay in any case.
		log.Error("dead-letter change event", zap.NamedError("cause", cause), zap.Error(err))
		_ = msg.NakWithDelay(s.backoff(md.NumDelivered))
		return
	}
	s.metrics.dlq.Inc()
	log.Error("change event dead-lettered", zap.String("dlq", schemas.DLQSubject(s.cfg.Stage)), zap.Error(cause))
	if err := msg.Term(); err != nil {
		log.Warn("term change event", zap.Error(err))
	}
}

// process parses, renders and publishes one event. A nil error and a nil
// publication mean the message may be acked; a publication is a BOM sent to
// BOMS whose ack the message must wait for.
func (s *Service) process(ctx context.Context, data []byte, changeSeq uint64, log *zap.Logger) (*publication, error) {
	var ev schemas.WorkloadChange
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, permanent{fmt.Errorf("parse change event at seq %d: %w", changeSeq, err)}
	}
	w := ev.Data.Workload
	if w.Cluster == "" || w.UID == "" || w.Kind == "" || w.Name == "" {
		return nil, permanent{fmt.Errorf("change event %q at seq %d: workload identity incomplete", ev.ID, changeSeq)}
	}
	if ev.IsTombstone() {
		if err := s.publishTombstone(ctx, w, changeSeq); err != nil {
			return nil, err
		}
		s.metrics.tombstones.Inc()
		log.Debug("tombstone published", zap.Stringer("workload", w))
		return nil, nil
	}
	res, err := s.renderSafely(ev)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", w, err)
	}
	if res.BOM == nil {
		s.metrics.skipped.Inc()
		log.Debug("no bom for workload", zap.Stringer("workload", w), zap.String("reason", res.Skipped))
		return nil, nil
	}
	hash := schemas.BomHash(res.BOM)
	if res.BomHash != "" && res.BomHash != hash {
		return nil, permanent{fmt.Errorf("render %s: result bomHash %s does not match its bytes (%s)", w, res.BomHash, hash)}
	}
	m := nats.NewMsg(schemas.BOMsSubject(w))
	m.Data = res.BOM
	m.Header.Set(schemas.HeaderBomHash, hash)
	m.Header.Set(schemas.HeaderInputHash, ev.Data.InputHash)
	m.Header.Set(schemas.HeaderChangeSeq, strconv.FormatUint(changeSeq, 10))
	m.Header.Set(schemas.HeaderWorkload, schemas.WorkloadHeader(w))
	f, err := s.pub.PublishMsgAsync(m, jetstream.WithMsgID(hash), jetstream.WithExpectStream(schemas.StreamBOMs))
	if err != nil {
		return nil, fmt.Errorf("publish bom of %s: %w", w, err)
	}
	return &publication{s: s, f: f, w: w, hash: hash, log: log}, nil
}

// publication is a BOM publish waiting for the stream's ack.
type publication struct {
	s    *Service
	f    jetstream.PubAckFuture
	w    schemas.Workload
	hash string
	log  *zap.Logger
}

// wait returns nil once BOMS has stored the BOM (or dropped it as a
// duplicate), and the publish error otherwise. The publisher's ack timeout
// (messageTimeout) ends a wait on a server that never answers.
func (p *publication) wait(ctx context.Context) error {
	select {
	case ack := <-p.f.Ok():
		p.s.metrics.rendered.Inc()
		p.log.Debug("bom published", zap.Stringer("workload", p.w), zap.String("bomHash", p.hash), zap.Uint64("bomSeq", ack.Sequence), zap.Bool("duplicate", ack.Duplicate))
		return nil
	case err := <-p.f.Err():
		return fmt.Errorf("publish bom of %s: %w", p.w, err)
	case <-ctx.Done():
		return fmt.Errorf("publish bom of %s: %w", p.w, ctx.Err())
	}
}

// renderSafely runs the renderer, timing it and turning a panic into a
// permanent error.
func (s *Service) renderSafely(ev schemas.WorkloadChange) (res transformer.Result, err error) {
	start := time.Now()
	defer func() {
		s.metrics.renderSeconds.Observe(time.Since(start).Seconds())
		if p := recover(); p != nil {
			err = permanent{fmt.Errorf("renderer panicked: %v", p)}
		}
	}()
	return s.render.Render(ev)
}

func (s *Service) publishTombstone(ctx context.Context, w schemas.Workload, changeSeq uint64) error {
	body, err := schemas.CanonicalJSON(w)
	if err != nil {
		return permanent{fmt.Errorf("tombstone of %s: %w", w, err)}
	}
	m := nats.NewMsg(schemas.BOMsSubject(w))
	m.Data = body
	m.Header.Set(schemas.HeaderTombstone, "true")
	m.Header.Set(schemas.HeaderWorkload, schemas.WorkloadHeader(w))
	m.Header.Set(schemas.HeaderChangeSeq, strconv.FormatUint(changeSeq, 10))
	if _, err := s.bus.JS.PublishMsg(ctx, m, jetstream.WithMsgID(schemas.TombstoneMsgID(w, changeSeq)), jetstream.WithExpectStream(schemas.StreamBOMs)); err != nil {
		return fmt.Errorf("publish tombstone of %s: %w", w, err)
	}
	return nil
}
