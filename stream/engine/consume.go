package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

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
