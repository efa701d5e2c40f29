package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// RedriveAttempts is how often Redrive calls the handler on a transient
// failure before it gives up and dead-letters the message again.
const RedriveAttempts = 3

// Redriven is the outcome of one redrive.
type Redriven struct {
	// Done: the handler succeeded and the dead letter was removed.
	Done bool
	// Reason says why it failed again (redacted), and ID is the dead
	// letter that holds the message now; both are empty when Done.
	Reason string
	ID     uint64
}

// Redrive puts one dead letter of the engine's stage back through its
// handler, as Run handles a redelivery: in order with the messages of the
// same subject that Run or Replay hold (it waits for them, and they for it),
// with the panic recovery, attempt timeout, backoff and metrics of Run, and
// at most RedriveAttempts calls. When the handler succeeds the dead letter
// is removed. When it fails (a panic, a permanent error, or the last
// transient one) the message becomes a dead letter again with the new
// reason, and then the old one is removed: a crash between the two leaves
// both, never neither. The error is for what Redrive itself could not do
// (ctx ended, the dead-letter stream unwritable); the dead letter is then
// left as it was.
func (e *Engine) Redrive(ctx context.Context, d deadletter.Letter) (Redriven, error) {
	if d.Stage != e.cfg.Stage {
		return Redriven{}, fmt.Errorf("dead letter %d belongs to stage %s, not %s", d.ID, d.Stage, e.cfg.Stage)
	}
	l, err := e.subjects.lock(ctx, d.Subject)
	if err != nil {
		return Redriven{}, fmt.Errorf("redrive dead letter %d: %w", d.ID, err)
	}
	defer e.subjects.unlock(d.Subject, l)
	m := &Msg{Subject: d.Subject, Header: d.Header, Data: d.Data, Seq: d.Seq, Delivered: d.Delivered + 1,
		Redelivered: true, Time: d.Time}
	e.m.redeliveries.Inc()
	e.n.redeliveries.Add(1)
	var reason string
	for attempt := 1; ; attempt++ {
		m.Attempt = attempt
		start := time.Now()
		err := e.invoke(ctx, m)
		e.m.seconds.Observe(time.Since(start).Seconds())
		if err == nil {
			e.m.handled.WithLabelValues("ok").Inc()
			e.n.ok.Add(1)
			if err := e.dlq.Remove(ctx, d.ID); err != nil {
				return Redriven{}, fmt.Errorf("redrive: handled, but %w", err)
			}
			return Redriven{Done: true}, nil
		}
		if ctx.Err() != nil && !IsPermanent(err) {
			return Redriven{}, fmt.Errorf("redrive dead letter %d: %w", d.ID, ctx.Err())
		}
		if IsPermanent(err) {
			reason = err.Error()
			break
		}
		if attempt >= RedriveAttempts {
			reason = fmt.Sprintf("after %d attempts: %v", attempt, err)
			break
		}
		e.m.retries.Inc()
		e.n.retries.Add(1)
		if !sleep(ctx, backoff(e.cfg.BaseBackoff, e.cfg.MaxBackoff, attempt)) {
			return Redriven{}, fmt.Errorf("redrive dead letter %d: %w", d.ID, ctx.Err())
		}
	}
	reason = schemas.RedactText(reason)
	// A message id of its own: the first dead letter's is still in the
	// stream's duplicate window, and a redrive retried after a crash finds
	// its own.
	msgID := deadletter.ID(e.cfg.Stage, e.cfg.Stream, m.Seq) + ":redrive:" + strconv.FormatUint(d.ID, 10)
	id, err := e.dlq.Put(ctx, e.deadLetterOf(m, reason), msgID)
	if err != nil {
		return Redriven{}, fmt.Errorf("redrive dead letter %d: %w", d.ID, err)
	}
	e.m.handled.WithLabelValues("dead-lettered").Inc()
	e.n.dlq.Add(1)
	e.log.Error("dead-lettered again", zap.String("subject", m.Subject), zap.Uint64("seq", m.Seq), zap.Uint64("was", d.ID),
		zap.Uint64("id", id), zap.String("reason", reason))
	if id != d.ID {
		if err := e.dlq.Remove(ctx, d.ID); err != nil {
			return Redriven{}, fmt.Errorf("redrive: dead-lettered again as %d, but %w", id, err)
		}
	}
	return Redriven{Reason: reason, ID: id}, nil
}

// subjectLocks serialises the work on one subject across an engine's
// consume calls and redrives: one holder per subject at a time.
type subjectLocks struct {
	mu sync.Mutex
	m  map[string]*subjectLock
}

type subjectLock struct {
	ch   chan struct{} // holds one token while locked
	refs int           // holders and waiters
}

// lock takes subj's lock, waiting until it is free or ctx is done.
func (s *subjectLocks) lock(ctx context.Context, subj string) (*subjectLock, error) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*subjectLock{}
	}
	l := s.m[subj]
	if l == nil {
		l = &subjectLock{ch: make(chan struct{}, 1)}
		s.m[subj] = l
	}
	l.refs++
	s.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
		return l, nil
	default:
	}
	select {
	case l.ch <- struct{}{}:
		return l, nil
	case <-ctx.Done():
		s.release(subj, l)
		return nil, ctx.Err()
	}
}

// unlock frees a lock that lock returned.
func (s *subjectLocks) unlock(subj string, l *subjectLock) {
	<-l.ch
	s.release(subj, l)
}

func (s *subjectLocks) release(subj string, l *subjectLock) {
	s.mu.Lock()
	if l.refs--; l.refs == 0 {
		delete(s.m, subj)
	}
	s.mu.Unlock()
}
