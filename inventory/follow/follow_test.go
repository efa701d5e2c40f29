package follow_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/clustertest"
)

// seqIndex keeps the sequences it was given, and how often it settled.
type seqIndex struct {
	mu      sync.Mutex
	seqs    []uint64
	settled int
}

func (ix *seqIndex) LastSeq() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.seqs) == 0 {
		return 0
	}
	return ix.seqs[len(ix.seqs)-1]
}

func (ix *seqIndex) Apply(msgs []*jetstream.RawStreamMsg) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, m := range msgs {
		ix.seqs = append(ix.seqs, m.Sequence)
	}
}

func (ix *seqIndex) Settle() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.settled++
}

func (ix *seqIndex) state() ([]uint64, int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return slices.Clone(ix.seqs), ix.settled
}

// publish appends n messages to BOMS and returns the last sequence.
func publish(t *testing.T, bus *stream.Bus, n int) uint64 {
	t.Helper()
	var last uint64
	for i := range n {
		m := nats.NewMsg(fmt.Sprintf("%sc.uid-%d", schemas.SubjectBOMsPrefix, i))
		m.Data = []byte("x")
		ack, err := bus.Writer().Publish(context.Background(), m, "")
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Seq
	}
	return last
}

// upTo is 1..n.
func upTo(n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// run starts f until the test ends; a read that fails fails the test.
func run(t *testing.T, f *follow.Follower) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, func(err error) { t.Errorf("follow: %v", err) })
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func wait(t *testing.T, f *follow.Follower, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Wait(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

// The follower loads what the stream holds, says so, then applies what
// is stored next, each message once and in order.
func TestFollowerLoadsThenFollows(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	last := publish(t, bus, 3)
	ix := &seqIndex{}
	f := follow.New(bus.Reader(), schemas.StreamBOMs, ix)
	if f.Loaded() {
		t.Fatal("loaded before Run")
	}
	run(t, f)
	wait(t, f, last)
	bustest.Eventually(t, "the first load", 10*time.Second, f.Loaded)
	last = publish(t, bus, 5)
	wait(t, f, last)
	seqs, settled := ix.state()
	if !slices.Equal(seqs, upTo(8)) || settled < 2 || f.LastSeq() != 8 {
		t.Errorf("applied %v, settled %d times, last seq %d: want 1-8 once each, settled after the load and after what followed", seqs, settled, f.LastSeq())
	}
}

// A stream that does not exist yet is an empty one, loaded; once it is
// made, what it stores is followed.
func TestFollowerWaitsForItsStream(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	_, js := bus.Raw()
	const name = "FOLLOW-LATER"
	ix := &seqIndex{}
	f := follow.New(bus.Reader(), name, ix)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	bustest.Eventually(t, "loaded without a stream", 10*time.Second, f.Loaded)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: []string{"later.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), "later.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	wait(t, f, 1)
	if seqs, _ := ix.state(); !slices.Equal(seqs, []uint64{1}) {
		t.Errorf("applied %v, want [1]", seqs)
	}
}

// Load reads up to the last message stored, after what the index holds.
func TestLoadResumesAfterLastSeq(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	publish(t, bus, 3)
	ix := &seqIndex{}
	ctx := context.Background()
	if n, err := follow.Load(ctx, bus.Reader(), schemas.StreamBOMs, ix); err != nil || n != 3 {
		t.Fatalf("first load: %d, %v", n, err)
	}
	publish(t, bus, follow.BatchSize+1)
	if n, err := follow.Load(ctx, bus.Reader(), schemas.StreamBOMs, ix); err != nil || n != follow.BatchSize+1 {
		t.Fatalf("second load: %d, %v", n, err)
	}
	if seqs, settled := ix.state(); !slices.Equal(seqs, upTo(follow.BatchSize+4)) || settled != 2 {
		t.Errorf("applied %d messages (settled %d times), want 1-%d once each", len(seqs), settled, follow.BatchSize+4)
	}
}

// The server restarting on its store: the follower resumes after the last
// message it applied, and misses none and applies none twice.
func TestFollowerResumesAfterServerRestart(t *testing.T) {
	c := clustertest.Start(t, 1, clustertest.Options{})
	bus := bustest.Open(t, stream.Config{URL: c.URL()})
	publish(t, bus, 2)
	ix := &seqIndex{}
	f := follow.New(bus.Reader(), schemas.StreamBOMs, ix)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, nil) }() // errors while the server is down are expected
	t.Cleanup(func() { cancel(); <-done })
	wait(t, f, 2)
	c.Nodes[0].Stop()
	c.Restart(c.Nodes[0])
	last := publish(t, bus, 3)
	wait(t, f, last)
	if seqs, _ := ix.state(); !slices.Equal(seqs, upTo(5)) {
		t.Errorf("applied %v, want 1-5 once each", seqs)
	}
}

// pushOnly is a Source whose reads find nothing new, so that every
// message reaches the index through the consumer; it records the
// warnings about lost messages.
type pushOnly struct {
	*stream.Bus
	mu   sync.Mutex
	lost [][2]uint64
}

func (p *pushOnly) Messages(context.Context, string, string, uint64, func(*jetstream.RawStreamMsg) error) error {
	return nil
}

func (p *pushOnly) WarnLost(_ context.Context, _ string, from, to uint64, _ string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lost = append(p.lost, [2]uint64{from, to})
}

// A message the store no longer holds is stepped over as the consumer
// pushes what follows it, with a warning naming its sequence.
func TestFollowerWarnsOfWhatTheConsumerStepsOver(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	publish(t, bus, 4)
	s, err := bus.Stream(context.Background(), schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	ix := &seqIndex{seqs: []uint64{1}}
	src := &pushOnly{Bus: bus}
	f := follow.New(src, schemas.StreamBOMs, ix)
	run(t, f)
	wait(t, f, 4)
	src.mu.Lock()
	defer src.mu.Unlock()
	if seqs, _ := ix.state(); !slices.Equal(seqs, []uint64{1, 2, 4}) || !slices.Equal(src.lost, [][2]uint64{{3, 3}}) {
		t.Errorf("applied %v, warned of %v: want 2 and 4 applied, 3 named", seqs, src.lost)
	}
}
