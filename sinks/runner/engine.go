package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream"
)

// DLQ headers added to a dead-lettered message, next to schemas.HeaderReason.
const (
	HeaderDLQSubject = "Bomstream-Dlq-Subject"
	HeaderDLQSeq     = "Bomstream-Dlq-Seq"
)

// maxReason bounds the reason header.
const maxReason = 1024

// errInterrupted means the runner is stopping; the message goes back to the
// server unacknowledged.
var errInterrupted = errors.New("interrupted")

// engine is what Runner and Replay share: the per-message steps.
type engine struct {
	name   string
	sink   sinks.Sink
	cfg    Config
	js     jetstream.JetStream
	boms   jetstream.Stream
	ledger jetstream.KeyValue
	log    *zap.Logger
	m      *metrics
	n      counters
	// acks is false for Replay's ordered consumer, which has nothing to ack.
	acks bool
}

func newEngine(ctx context.Context, bus *stream.Bus, s sinks.Sink, cfg Config, log *zap.Logger, m *metrics, acks bool) (*engine, error) {
	name := s.Name()
	boms, err := bus.JS.Stream(ctx, schemas.StreamBOMs)
	if err != nil {
		return nil, fmt.Errorf("sink %s: stream %s: %w", name, schemas.StreamBOMs, err)
	}
	ledger, err := bus.Ledger(ctx, name)
	if err != nil {
		return nil, err
	}
	return &engine{name: name, sink: s, cfg: cfg, js: bus.JS, boms: boms, ledger: ledger, log: log, m: m, acks: acks}, nil
}

// handle takes one message through dedupe, the sink, the ledger and the ack,
// and calls release once it is done with the message. stop is done when the
// runner is stopping; work outlives it by DrainTimeout so that the message in
// hand can finish. It returns nil when the message reached an end (exported,
// skipped or dead-lettered) and an error when it was handed back for
// redelivery.
//
// When the runner acks and is not latest-only, handle returns as soon as the
// sink has exported, and the ledger put and the ack (still in that order)
// finish on another goroutine before release: the next message of the
// workload does not wait for them. Their failure is logged and the message
// redelivered, as when they run in line.
func (e *engine) handle(stop, work context.Context, msg jetstream.Msg, release func()) error {
	inline := true
	defer func() {
		if inline {
			release()
		}
	}()
	if e.acks {
		done := make(chan struct{})
		defer close(done)
		go e.keepAlive(msg, done)
	}
	meta, err := msg.Metadata()
	if err != nil {
		e.log.Error("message without jetstream metadata", zap.String("subject", msg.Subject()), zap.Error(err))
		e.term(msg)
		return nil
	}
	// WithLazy: the fields are encoded only when a line is logged, which on
	// the normal path (Debug lines at Info level) is never.
	log := e.log.WithLazy(zap.Uint64("streamSeq", meta.Sequence.Stream), zap.String("subject", msg.Subject()))
	it, err := parse(msg, meta)
	if err != nil {
		return e.deadLetter(work, msg, meta, log, "bad message: "+err.Error())
	}
	log = log.WithLazy(zap.Stringer("workload", it.workload), zap.Uint64("changeSeq", it.changeSeq))
	if it.tombstone {
		log = log.WithLazy(zap.Bool("tombstone", true))
	} else {
		log = log.WithLazy(zap.String("bomHash", it.bom.BomHash))
	}
	key := it.ledgerKey()
	if _, err := e.ledger.Get(work, key); err == nil {
		e.n.dup.Add(1)
		e.m.skipped.WithLabelValues("duplicate").Inc()
		log.Debug("already exported")
		e.ack(msg)
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		log.Warn("ledger lookup", zap.Error(err))
		e.nak(msg, e.backoff(int(meta.NumDelivered)))
		return fmt.Errorf("ledger lookup: %w", err)
	}
	if e.cfg.LatestOnly {
		superseded, err := e.superseded(work, it)
		if err != nil {
			log.Warn("latest-only check", zap.Error(err))
			e.nak(msg, e.backoff(int(meta.NumDelivered)))
			return err
		}
		if superseded {
			e.n.superseded.Add(1)
			e.m.skipped.WithLabelValues("superseded").Inc()
			log.Debug("superseded")
			e.ack(msg)
			return nil
		}
	}
	err = e.attempt(stop, work, msg, log, func(ctx context.Context) error {
		if it.tombstone {
			return e.sink.Tombstone(ctx, it.ts)
		}
		return e.sink.Export(ctx, it.bom)
	})
	switch {
	case errors.Is(err, errInterrupted):
		e.nak(msg, 0)
		return err
	case err != nil:
		return e.deadLetter(work, msg, meta, log, err.Error())
	}
	if e.acks && !e.cfg.LatestOnly {
		inline = false
		go func() {
			defer release()
			_ = e.record(work, msg, it, key, log)
		}()
		return nil
	}
	return e.record(work, msg, it, key, log)
}

// record puts the ledger key of an exported message, counts it, and acks it.
func (e *engine) record(work context.Context, msg jetstream.Msg, it item, key string, log *zap.Logger) error {
	if _, err := e.ledger.Put(work, key, it.record()); err != nil {
		// Redelivery calls the idempotent sink again, then retries the put.
		log.Warn("ledger put after export", zap.Error(err))
		e.nak(msg, e.backoff(1))
		return fmt.Errorf("ledger put: %w", err)
	}
	if e.cfg.LatestOnly {
		if _, err := e.ledger.Put(work, it.latestKey(), it.record()); err != nil {
			log.Warn("ledger put of latest change", zap.Error(err))
		}
	}
	if it.tombstone {
		e.n.tombstones.Add(1)
		e.m.tombstones.Inc()
		log.Debug("tombstone applied")
	} else {
		e.n.exported.Add(1)
		e.m.exported.Inc()
		log.Debug("exported")
	}
	e.ack(msg)
	return nil
}

// superseded reports whether a newer version of the workload makes it this
// one pointless for a latest-only sink.
func (e *engine) superseded(ctx context.Context, it item) (bool, error) {
	last, err := e.boms.GetLastMsgForSubject(ctx, schemas.BOMsSubject(it.workload))
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("last message on subject: %w", err)
	}
	if err == nil && last.Sequence > it.streamSeq {
		return true, nil
	}
	entry, err := e.ledger.Get(ctx, it.latestKey())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger %s: %w", it.latestKey(), err)
	}
	var r record
	if err := json.Unmarshal(entry.Value(), &r); err != nil {
		return false, nil // unreadable: the put after this export repairs it
	}
	return r.ChangeSeq > it.changeSeq, nil
}

// attempt calls fn until it succeeds, fails permanently, or MaxAttempts
// transient failures have happened. It returns errInterrupted when stop is
// done before a transient failure could be retried.
func (e *engine) attempt(stop, work context.Context, msg jetstream.Msg, log *zap.Logger, fn func(context.Context) error) error {
	for n := 1; ; n++ {
		start := time.Now()
		err := e.call(work, log, fn)
		e.m.exportSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			return nil
		}
		if sinks.IsPermanent(err) {
			return err
		}
		if stop.Err() != nil {
			return errInterrupted
		}
		if n >= e.cfg.MaxAttempts {
			return fmt.Errorf("after %d attempts: %w", n, err)
		}
		e.n.retries.Add(1)
		e.m.retries.Inc()
		d := e.backoff(n)
		log.Warn("transient sink error, retrying", zap.Int("attempt", n), zap.Duration("backoff", d), zap.Error(err))
		t := time.NewTimer(d)
		select {
		case <-stop.Done():
			t.Stop()
			return errInterrupted
		case <-t.C:
		}
	}
}

// call runs fn, turning a panic in the sink into a permanent error.
func (e *engine) call(ctx context.Context, log *zap.Logger, fn func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("sink panicked", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			err = sinks.Permanent(fmt.Errorf("sink panicked: %v", r))
		}
	}()
	return fn(ctx)
}

// backoff is exponential with full jitter: uniform in [0, min(max, base*2^(n-1))].
func (e *engine) backoff(n int) time.Duration {
	ceiling := e.cfg.MaxBackoff
	if n < 1 {
		n = 1
	}
	if n <= 32 {
		if d := e.cfg.BaseBackoff << (n - 1); d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// deadLetter publishes the message to bomstream.dlq.sink.<name> with the
// reason, then terminates it. When the DLQ cannot be written the message is
// handed back for a later redelivery instead: it is never dropped.
func (e *engine) deadLetter(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, log *zap.Logger, reason string) error {
	seq := strconv.FormatUint(meta.Sequence.Stream, 10)
	h := nats.Header{}
	for k, v := range msg.Headers() {
		// Nats-Msg-Id (the bomHash) would make the DLQ drop the same BOM
		// failing in a second sink as a duplicate; it gets its own id below.
		if strings.HasPrefix(k, "Nats-") {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	h.Set(schemas.HeaderReason, headerValue(reason))
	h.Set(HeaderDLQSubject, msg.Subject())
	h.Set(HeaderDLQSeq, seq)
	h.Set(jetstream.MsgIDHeader, "sink."+e.name+":"+seq)
	out := &nats.Msg{Subject: schemas.DLQSubject("sink." + e.name), Header: h, Data: msg.Data()}
	if _, err := e.js.PublishMsg(ctx, out); err != nil {
		log.Error("dead-letter publish", zap.Error(err))
		e.nak(msg, e.backoff(int(meta.NumDelivered)))
		return fmt.Errorf("dead-letter publish: %w", err)
	}
	e.n.dlq.Add(1)
	e.m.dlq.Inc()
	log.Error("dead-lettered", zap.String("reason", headerValue(reason)))
	e.term(msg)
	return nil
}

// headerValue makes reason a single header line of at most maxReason bytes.
func headerValue(reason string) string {
	reason = strings.NewReplacer("\r", " ", "\n", " ").Replace(reason)
	if len(reason) <= maxReason {
		return reason
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}

// keepAlive resets the message's ack deadline until done is closed.
func (e *engine) keepAlive(msg jetstream.Msg, done <-chan struct{}) {
	t := time.NewTicker(e.cfg.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := msg.InProgress(); err != nil {
				e.log.Debug("in-progress ack", zap.Error(err))
			}
		}
	}
}

func (e *engine) ack(msg jetstream.Msg) {
	if !e.acks {
		return
	}
	if err := msg.Ack(); err != nil {
		e.log.Warn("ack", zap.Error(err))
	}
}

func (e *engine) term(msg jetstream.Msg) {
	if !e.acks {
		return
	}
	if err := msg.Term(); err != nil {
		e.log.Warn("term", zap.Error(err))
	}
}

func (e *engine) nak(msg jetstream.Msg, delay time.Duration) {
	if !e.acks {
		return
	}
	var err error
	if delay > 0 {
		err = msg.NakWithDelay(delay)
	} else {
		err = msg.Nak()
	}
	if err != nil {
		e.log.Warn("nak", zap.Error(err))
	}
}
