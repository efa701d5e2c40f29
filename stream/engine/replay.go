package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

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
	s, err := e.bus.Stream(ctx, e.cfg.Stream)
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
	var (
		end  uint64
		info *jetstream.ConsumerInfo
		cons jetstream.Consumer
	)
	err = e.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		end, err = e.bus.Reader().LastStored(ctx, e.cfg.Stream, e.cfg.Filter)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	err = e.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		cons, err = s.OrderedConsumer(ctx, occ)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", e.cfg.Stage, err)
	}
	err = e.bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		info, err = cons.Info(ctx)
		return err
	})
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
	e.bus.Reader().WarnLost(ctx, e.cfg.Stream, startSeq, end, "the replay of "+e.cfg.Stage)
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
