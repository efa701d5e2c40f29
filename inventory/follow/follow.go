package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Index is what a Follower keeps current: an in-memory index of one
// stream. A Follower calls its methods from one goroutine at a time; the
// index guards what its readers see.
type Index interface {
	// LastSeq is the last stream sequence the index has applied, 0 for
	// none. A read resumes after it.
	LastSeq() uint64
	// Apply adds msgs, in stream order, each after every message applied
	// before. It must not keep msgs past the call.
	Apply(msgs []*jetstream.RawStreamMsg)
	// Settle is called once every message stored so far is applied (at
	// the end of a Load, then whenever no message waits), for work an
	// index defers until then, such as a sort.
	Settle()
}

// Reader reads a stream in order, up to its last message stored when the
// read began, warning of messages a damaged store lost (stream.Bus's
// Messages).
type Reader interface {
	Messages(ctx context.Context, streamName, subject string, fromSeq uint64, fn func(*jetstream.RawStreamMsg) error) error
}

// Source is a Reader that also gives raw access to a stream, for the
// ordered consumer that pushes what is stored next (stream.Bus).
type Source interface {
	Reader
	// Stream is the stream called name, riding through a leader election.
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	// WarnLost logs that a read of streamName from from to to skipped
	// messages the store lost there, when it did.
	WarnLost(ctx context.Context, streamName string, from, to uint64, what string)
}

// BatchSize is the most messages one Apply is given.
const BatchSize = 2048

// Load applies to ix the messages of streamName after its LastSeq, up to
// the last one stored when it is called, then settles it. Messages are
// read in batches while the batch before is applied. It returns how many
// it read. A stream that does not exist is an error wrapping
// jetstream.ErrStreamNotFound; ix is not settled then.
func Load(ctx context.Context, r Reader, streamName string, ix Index) (int, error) {
	batches := make(chan []*jetstream.RawStreamMsg, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range batches {
			ix.Apply(b)
		}
	}()
	n := 0
	cur := make([]*jetstream.RawStreamMsg, 0, BatchSize)
	err := r.Messages(ctx, streamName, "", ix.LastSeq()+1, func(m *jetstream.RawStreamMsg) error {
		cur = append(cur, m)
		n++
		if len(cur) == BatchSize {
			batches <- cur
			cur = make([]*jetstream.RawStreamMsg, 0, BatchSize)
		}
		return nil
	})
	if len(cur) > 0 {
		batches <- cur
	}
	close(batches)
	<-done
	if err != nil {
		return n, err
	}
	ix.Settle()
	return n, nil
}

// Follower keeps one index current with one stream: it loads what the
// stream holds (Load), then applies each message as an ordered consumer
// pushes it, nothing durable left on the server. The consumer rides
// through a reconnect or a server restart by itself, resuming after the
// last message it delivered; when it ends, the Follower loads again from
// the index's LastSeq and follows anew. Loaded and Wait tell health checks
// and tests how far it got. It is safe for concurrent use.
type Follower struct {
	src        Source
	streamName string
	ix         Index
	retry      time.Duration

	mu      sync.Mutex
	loaded  bool
	applied chan struct{} // closed, and replaced, when a batch is applied
}

// New returns a Follower of streamName into ix; Run starts it.
func New(src Source, streamName string, ix Index) *Follower {
	return &Follower{src: src, streamName: streamName, ix: ix, retry: time.Second, applied: make(chan struct{})}
}

// Run follows the stream until ctx ends. A stream that does not exist yet
// counts as empty (loaded), and is looked for again every second. A read
// that fails is reported to onErr (when set) and tried again a second
// later.
func (f *Follower) Run(ctx context.Context, onErr func(error)) {
	for ctx.Err() == nil {
		err := f.follow(ctx)
		if err != nil && ctx.Err() == nil && onErr != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			onErr(fmt.Errorf("follow %s: %w", f.streamName, err))
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.retry):
		}
	}
}

// Loaded reports whether the first Load of Run has completed (or found no
// stream).
func (f *Follower) Loaded() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loaded
}

// LastSeq is the last sequence the index has applied.
func (f *Follower) LastSeq() uint64 { return f.ix.LastSeq() }

// Wait blocks until the index has applied the message at sequence seq (it
// is caught up to seq), or ctx ends.
func (f *Follower) Wait(ctx context.Context, seq uint64) error {
	for {
		f.mu.Lock()
		applied := f.applied
		f.mu.Unlock()
		if f.ix.LastSeq() >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("follow %s to seq %d: %w", f.streamName, seq, ctx.Err())
		case <-applied:
		}
	}
}

// signal wakes the waiters, and marks the first load done when loaded.
func (f *Follower) signal(loaded bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loaded = f.loaded || loaded
	close(f.applied)
	f.applied = make(chan struct{})
}

// follow loads what the stream holds, then applies what an ordered
// consumer pushes until it fails or ctx ends.
func (f *Follower) follow(ctx context.Context) error {
	_, err := Load(ctx, f.src, f.streamName, f.ix)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		f.ix.Settle()
		f.signal(true)
		return err
	}
	if err != nil {
		return err
	}
	f.signal(true)
	ctx, cancel := context.WithCancel(ctx) // ends push when apply does
	defer cancel()
	s, err := f.src.Stream(ctx, f.streamName)
	if err != nil {
		return err
	}
	cfg := jetstream.OrderedConsumerConfig{}
	if last := f.ix.LastSeq(); last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	}
	cons, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	pushed := make(chan pushedMsg, BatchSize)
	go push(ctx, it, pushed)
	return f.apply(ctx, pushed)
}

// pushedMsg is one message the consumer delivered, or the error that
// ended it.
type pushedMsg struct {
	m   *jetstream.RawStreamMsg
	err error
}

// push hands on what the consumer delivers until it fails or ctx ends.
func push(ctx context.Context, it jetstream.MessagesContext, out chan<- pushedMsg) {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		var md *jetstream.MsgMetadata
		if err == nil {
			md, err = msg.Metadata()
		}
		if err != nil {
			select {
			case out <- pushedMsg{err: err}:
			case <-ctx.Done():
			}
			return
		}
		m := &jetstream.RawStreamMsg{Subject: msg.Subject(), Sequence: md.Sequence.Stream, Header: msg.Headers(), Data: msg.Data(), Time: md.Timestamp}
		select {
		case out <- pushedMsg{m: m}:
		case <-ctx.Done():
			return
		}
	}
}

// apply applies what push hands on, as many messages at once as wait,
// settling the index when none does.
func (f *Follower) apply(ctx context.Context, pushed <-chan pushedMsg) error {
	batch := make([]*jetstream.RawStreamMsg, 0, BatchSize)
	for {
		var p pushedMsg
		select {
		case <-ctx.Done():
			return nil
		case p = <-pushed:
		}
		batch = batch[:0]
		for p.err == nil {
			batch = append(batch, p.m)
			if len(batch) == BatchSize {
				break
			}
			select {
			case p = <-pushed:
				continue
			default:
			}
			break
		}
		if len(batch) > 0 {
			f.warnGap(ctx, batch)
			f.ix.Apply(batch)
			f.ix.Settle()
			f.signal(false)
		}
		if p.err != nil {
			return p.err
		}
	}
}

// warnGap warns when the batch does not start right after the last
// message applied: the store may have lost the messages between (a
// damaged block file), which the consumer steps over as Messages does.
func (f *Follower) warnGap(ctx context.Context, batch []*jetstream.RawStreamMsg) {
	last := f.ix.LastSeq()
	for _, m := range batch {
		if m.Sequence > last+1 {
			f.src.WarnLost(ctx, f.streamName, last+1, m.Sequence-1, "the follow of "+f.streamName)
		}
		last = m.Sequence
	}
}
