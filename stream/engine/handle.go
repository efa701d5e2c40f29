package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// handle takes one delivery to exactly one end: acked, dead-lettered and
// terminated, or handed back (Nak) because the engine stops or the
// dead-letter stream cannot be written.
func (d *dispatcher) handle(dl *delivery) {
	e := d.e
	if d.stop.Err() != nil {
		d.nak(dl.msg, 0)
		return
	}
	meta, err := dl.msg.Metadata()
	if err != nil {
		e.log.Error("message without jetstream metadata", zap.String("subject", dl.msg.Subject()), zap.Error(err))
		d.term(dl.msg)
		return
	}
	dl.meta = meta
	m := &Msg{Subject: dl.msg.Subject(), Header: dl.msg.Headers(), Data: dl.msg.Data(), Seq: meta.Sequence.Stream,
		Delivered: meta.NumDelivered, Time: meta.Timestamp}
	m.Redelivered = m.Delivered > 1 || m.Seq <= e.recovered.Load()
	if d.withAcks && e.journal != nil && m.Seq <= e.recovered.Load() {
		defer e.journal.end(m.Seq) // settled one way or the other
	}
	if reason, poison := d.poison(m); poison {
		d.deadLetter(dl, m, reason)
		return
	}
	if meta.NumDelivered > 1 {
		e.m.redeliveries.Inc()
		e.n.redeliveries.Add(1)
	}
	d.attempts(dl, m)
}

// poison says why m is not worked on again: the server delivered it more
// than MaxDeliver times, or (after a crash, see the journal) work on it
// began more than MaxDeliver times. It records in the journal that work on
// a recovered message begins.
func (d *dispatcher) poison(m *Msg) (string, bool) {
	e := d.e
	if !d.withAcks {
		return "", false
	}
	if m.Delivered > uint64(e.cfg.MaxDeliver) {
		return fmt.Sprintf("poison: delivered %d times without being settled (a stage crashed, hung or timed out while holding it); not worked on again", m.Delivered), true
	}
	if e.journal == nil || m.Seq > e.recovered.Load() {
		return "", false
	}
	n, err := e.journal.begin(d.work, m.Seq)
	if err != nil {
		e.log.Warn("crash journal", zap.Uint64("seq", m.Seq), zap.Error(err))
	}
	if n > e.cfg.MaxDeliver {
		return fmt.Sprintf("poison: the stage stopped without settling it %d times (it crashed while working on it); not worked on again", n), true
	}
	return "", false
}

// attempts calls the handler on m until it succeeds (ack), fails for good
// (dead letter: a permanent error, MaxAttempts reached), or the engine
// stops (Nak), with backoff between transient failures.
func (d *dispatcher) attempts(dl *delivery, m *Msg) {
	e := d.e
	var failingSince time.Time
	settle := func() {
		if !failingSince.IsZero() {
			e.health.recovered(m.Subject)
		}
	}
	for attempt := 1; ; attempt++ {
		m.Attempt = attempt
		start := time.Now()
		err := d.call(m)
		switch {
		case errors.Is(err, errStopping):
			settle()
			d.nak(dl.msg, 0)
			return
		case err == nil:
			e.m.seconds.Observe(time.Since(start).Seconds())
			settle()
			e.m.handled.WithLabelValues("ok").Inc()
			e.n.ok.Add(1)
			d.ack(dl.msg)
			return
		}
		e.m.seconds.Observe(time.Since(start).Seconds())
		if reason, final := d.final(err, attempt); final {
			settle()
			d.deadLetter(dl, m, reason)
			return
		}
		if failingSince.IsZero() {
			failingSince = start
		}
		if !d.retryWait(m, err, attempt, failingSince) {
			settle()
			d.nak(dl.msg, 0)
			return
		}
	}
}

// final says whether err ends the attempts with a dead letter, and why.
func (d *dispatcher) final(err error, attempt int) (string, bool) {
	if IsPermanent(err) {
		return err.Error(), true
	}
	if n := d.e.cfg.MaxAttempts; n > 0 && attempt >= n {
		return fmt.Sprintf("after %d attempts: %v", attempt, err), true
	}
	return "", false
}

// retryWait counts a transient failure, marks the stage degraded when the
// subject keeps failing, logs it and waits the backoff; false when the
// engine stops first.
func (d *dispatcher) retryWait(m *Msg, err error, attempt int, failingSince time.Time) bool {
	e := d.e
	if d.stop.Err() != nil {
		return false
	}
	e.m.retries.Inc()
	e.n.retries.Add(1)
	wait := backoff(e.cfg.BaseBackoff, e.cfg.MaxBackoff, attempt)
	if attempt >= degradedAfter {
		e.health.failing(m.Subject, schemas.RedactText(err.Error()), failingSince)
	}
	log := e.log.Warn
	if attempt > 3 && attempt%10 != 0 {
		log = e.log.Debug // a long outage logs every tenth attempt
	}
	log("transient failure, retrying", zap.String("subject", m.Subject), zap.Uint64("seq", m.Seq),
		zap.Int("attempt", attempt), zap.Duration("backoff", wait), zap.String("error", schemas.RedactText(err.Error())))
	return sleep(d.stop, wait)
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

// deadLetterOf is m as a dead letter of the engine's stage, with reason.
func (e *Engine) deadLetterOf(m *Msg, reason string) deadletter.Letter {
	return deadletter.Letter{Stage: e.cfg.Stage, Stream: e.cfg.Stream, Subject: m.Subject, Seq: m.Seq,
		Delivered: m.Delivered, Reason: reason, Header: m.Header, Data: m.Data}
}

// deadLetter parks the message on the stage's dead-letter subject with the
// reason, then terminates it. When that fails the message is handed back for
// a later redelivery: it is never dropped.
func (d *dispatcher) deadLetter(dl *delivery, m *Msg, reason string) {
	e := d.e
	reason = schemas.RedactText(reason)
	_, err := e.dlq.Put(d.work, e.deadLetterOf(m, reason), deadletter.ID(e.cfg.Stage, e.cfg.Stream, m.Seq))
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
