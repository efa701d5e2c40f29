package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/clustertest"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/ledger"
)

// TestEveryCallRidesThroughAnElection is the defect of issue 30: `run
// --once` on a 3-node cluster exited with "stream CHANGES: context deadline
// exceeded" when the CHANGES leader stopped: the drain check (CaughtUp)
// asked for stream and consumer info once, and a request sent while the
// stream's leader is being elected goes unanswered. Every read and
// idempotent write the stages and run --once make of the bus is called
// while (1) nothing answers for longer than a request's timeout (the bus's
// link to its server held, as an election holds a request) and (2) the
// cluster has no quorum (two of three servers stopped: no leader for any
// stream, the survivor answering "unavailable" or not at all), one server
// coming back only after that: every call must wait and answer as if
// nothing had happened.
func TestEveryCallRidesThroughAnElection(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{})
	// Canceled rather than with a deadline, as run --once's context is: a
	// request then waits the client's default timeout, not the test's.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(3*time.Minute, cancel)
	link := clustertest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", c.Nodes[0].Port))
	b, err := stream.Open(ctx, stream.Config{URL: "nats://" + link.Addr(), Replicas: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f := electionFixture(t, ctx, b)
	// Longer than a request's timeout (attemptTimeout, and the client's
	// default): a call that asks once has failed by then.
	outage := stream.AttemptTimeout + 3*time.Second

	t.Run("unanswered", func(t *testing.T) {
		callThrough(t, ctx, electionCalls(b, f), link.Stall, outage, link.Flow)
	})
	t.Run("no quorum", func(t *testing.T) {
		var stopped []*clustertest.Node
		stop := func() { // the servers the bus is not connected to
			for _, nd := range c.Nodes[1:] {
				nd.Stop()
				stopped = append(stopped, nd)
			}
		}
		callThrough(t, ctx, electionCalls(b, f), stop, outage, func() { c.Restart(stopped[0]) })
	})
	if ctx.Err() != nil {
		t.Fatal("test context canceled after 3 minutes")
	}
}

// callThrough calls every one of calls concurrently between down() and
// up(), outage apart, and fails t with each call that failed.
func callThrough(t *testing.T, ctx context.Context, calls []electionCall, down func(), outage time.Duration, up func()) {
	t.Helper()
	down()
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call.fn(ctx) })
	}
	time.Sleep(outage)
	up()
	start := time.Now()
	wg.Wait()
	t.Logf("every call answered %s after an outage of %s", time.Since(start).Round(time.Millisecond), outage)
	for i, call := range calls {
		if errs[i] != nil {
			t.Errorf("%s: %v", call.name, errs[i])
		}
	}
}

// fixture is what electionFixture stored for the calls to read.
type fixture struct {
	workloads []schemas.Workload
	deadID    uint64 // a dead letter to read
	removeID  uint64 // a dead letter to remove
}

// electionFixture stores 20 workloads' changes, a BOM each, two dead
// letters, a ledger entry, and a durable consumer of CHANGES ("drained")
// that has settled every change.
func electionFixture(t *testing.T, ctx context.Context, b *stream.Bus) fixture {
	t.Helper()
	var f fixture
	changes := changelog.New(b)
	for i := range 20 {
		w := stream.TestWorkload(fmt.Sprintf("e%02d", i))
		f.workloads = append(f.workloads, w)
		seq, _, err := changes.PublishChange(ctx, stream.Observed(t, w, "vllm:a"))
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(schemas.SubjectBOMsPrefix + "dev." + w.UID)
		m.Data = []byte("bom")
		if _, err := b.Writer().Publish(ctx, m, fmt.Sprintf("dev:%s:%d", w.UID, seq)); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []*uint64{&f.deadID, &f.removeID} {
		d := deadletter.Letter{Stage: "sink.files", Stream: schemas.StreamBOMs, Subject: "bomstream.boms.dev.e00", Seq: uint64(i + 1), Reason: "test"}
		var err error
		if *id, err = deadletter.New(b).Put(ctx, d, deadletter.ID(d.Stage, d.Stream, d.Seq)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := ledger.Open(ctx, b, "files")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, "w.dev.e00", []byte(`{"changeSeq":1}`), 0); err != nil {
		t.Fatal(err)
	}
	s, err := b.Stream(ctx, schemas.StreamChanges)
	if err != nil {
		t.Fatal(err)
	}
	for _, durable := range []string{"drained", "rewound"} {
		cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: durable, AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for try := 0; n < 20 && try < 50; try++ { // a new consumer's leader may not be elected yet
			batch, err := cons.Fetch(20-n, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for m := range batch.Messages() {
				if err := m.DoubleAck(ctx); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		if n != 20 {
			t.Fatalf("consumer %s settled %d changes, want 20", durable, n)
		}
	}
	if done, err := b.Durables().CaughtUp(ctx, schemas.StreamChanges, "drained"); err != nil || !done {
		t.Fatalf("before the election: caught up %v, %v", done, err)
	}
	return f
}

type electionCall struct {
	name string
	fn   func(ctx context.Context) error
}

// electionCalls are the bus's reads and idempotent writes that the stages
// and run --once make, each checking what it answers.
func electionCalls(b *stream.Bus, f fixture) []electionCall {
	count := func(want int, n *int) error {
		if *n != want {
			return fmt.Errorf("%d read, want %d", *n, want)
		}
		return nil
	}
	changes := changelog.New(b)
	return []electionCall{
		{"CaughtUp (run --once's drain)", func(ctx context.Context) error {
			done, err := b.Durables().CaughtUp(ctx, schemas.StreamChanges, "drained")
			if err == nil && !done {
				err = errors.New("not caught up")
			}
			return err
		}},
		{"Consumers", func(ctx context.Context) error {
			cs, err := b.Durables().List(ctx, schemas.StreamChanges)
			if err == nil && len(cs) != 2 {
				err = fmt.Errorf("%d consumers (%v), want 2", len(cs), cs)
			}
			return err
		}},
		{"Messages", func(ctx context.Context) error {
			n := 0
			err := b.Reader().Messages(ctx, schemas.StreamChanges, "", 0, func(*jetstream.RawStreamMsg) error { n++; return nil })
			return errors.Join(err, count(20, &n))
		}},
		{"LatestChanges", func(ctx context.Context) error {
			n := 0
			err := changes.LatestChanges(ctx, "dev", func(schemas.WorkloadChange, uint64) error { n++; return nil })
			return errors.Join(err, count(20, &n))
		}},
		{"DeadLetters (run --once's end)", func(ctx context.Context) error {
			n := 0
			err := deadletter.New(b).List(ctx, "", func(deadletter.Letter) error { n++; return nil })
			if n == 1 { // the other one may be removed already
				n = 2
			}
			return errors.Join(err, count(2, &n))
		}},
		{"GetDeadLetter", func(ctx context.Context) error {
			_, err := deadletter.New(b).Get(ctx, f.deadID)
			return err
		}},
		{"RemoveDeadLetter", func(ctx context.Context) error { return deadletter.New(b).Remove(ctx, f.removeID) }},
		{"GetMsg", func(ctx context.Context) error {
			m, err := b.Reader().GetMsg(ctx, schemas.StreamBOMs, 1)
			if err == nil && m == nil {
				err = errors.New("no message")
			}
			return err
		}},
		{"LastChange", func(ctx context.Context) error {
			_, _, ok, err := changes.LastChange(ctx, f.workloads[3])
			if err == nil && !ok {
				err = errors.New("no change")
			}
			return err
		}},
		{"LastSeq", func(ctx context.Context) error {
			seq, err := b.Reader().LastSeq(ctx, schemas.StreamBOMs)
			if err == nil && seq != 20 {
				err = fmt.Errorf("seq %d, want 20", seq)
			}
			return err
		}},
		{"State", func(ctx context.Context) error {
			st, err := b.Reader().State(ctx, schemas.StreamChanges)
			if err == nil && st.Msgs != 20 {
				err = fmt.Errorf("%d messages, want 20", st.Msgs)
			}
			return err
		}},
		{"Ledger.All (a sink's start)", func(ctx context.Context) error {
			l, err := ledger.Open(ctx, b, "files")
			if err != nil {
				return err
			}
			n := 0
			err = l.All(ctx, func(string, []byte, uint64) { n++ })
			return errors.Join(err, count(1, &n))
		}},
		{"LedgerNames", func(ctx context.Context) error {
			names, err := ledger.Names(ctx, b)
			if err == nil && len(names) != 1 {
				err = fmt.Errorf("ledgers %v, want [files]", names)
			}
			return err
		}},
		{"WorkloadUIDs", func(ctx context.Context) error {
			w := f.workloads[5]
			uids, err := changes.WorkloadUIDs(ctx, w.Cluster, w.Namespace, w.Kind, w.Name)
			if err == nil && len(uids) != 1 {
				err = fmt.Errorf("uids %v, want [%s]", uids, w.UID)
			}
			return err
		}},
		{"ResetConsumer", func(ctx context.Context) error {
			return b.Durables().Reset(ctx, schemas.StreamChanges, "rewound", 0)
		}},
		{"Retry (the engine's consumer info)", func(ctx context.Context) error {
			s, err := b.Stream(ctx, schemas.StreamChanges)
			if err != nil {
				return err
			}
			return b.Retry(ctx, true, func(ctx context.Context) error {
				_, err := s.Consumer(ctx, "drained")
				return err
			})
		}},
	}
}
