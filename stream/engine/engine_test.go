package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// publishN publishes n messages on each of the subjects bomstream.boms.t.<s>,
// interleaved, with payload "<s>:<i>", and returns them in publish order.
func publishN(t *testing.T, b *stream.Bus, subjects []string, n int) []string {
	t.Helper()
	ctx := testContext(t)
	var out []string
	for i := range n {
		for _, s := range subjects {
			m := nats.NewMsg(schemas.SubjectBOMsPrefix + "t." + s)
			m.Data = []byte(s + ":" + strconv.Itoa(i))
			if _, err := b.Writer().Publish(ctx, m, ""); err != nil {
				t.Fatal(err)
			}
			out = append(out, string(m.Data))
		}
	}
	return out
}

func testEngineConfig(durable string) Config {
	return Config{
		Stage: "test." + durable, Stream: schemas.StreamBOMs, Durable: durable, Filter: schemas.SubjectBOMsPrefix + ">",
		BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, AckWait: time.Second,
	}
}

// runEngine starts e in the background and returns a stop function that
// waits for Run to return.
// startEngine builds an engine for h on b and runs it until the test ends.
func startEngine(t *testing.T, b *stream.Bus, cfg Config, h Handler) *Engine {
	t.Helper()
	e, err := New(b, cfg, h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, e)
	return e
}

func runEngine(t *testing.T, e *Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(time.Minute):
				t.Error("Run did not return within a minute of its cancellation")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	bustest.Eventually(t, what, time.Minute, cond)
}

func caughtUp(t *testing.T, b *stream.Bus, durable string) func() bool {
	return func() bool {
		ok, err := b.Durables().CaughtUp(testContext(t), schemas.StreamBOMs, durable)
		return err == nil && ok
	}
}

// recorder records, per subject, the payloads a handler saw, in order.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]string
	n    atomic.Int64
}

func (r *recorder) add(m *Msg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string][]string{}
	}
	r.seen[m.Subject] = append(r.seen[m.Subject], string(m.Data))
	r.n.Add(1)
}

func (r *recorder) of(subject string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen[subject]...)
}

// Messages of one subject are handled one at a time and in stream order,
// whatever the handler's speed, while subjects run concurrently.
func TestEngineOrdersEachSubject(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	subjects := []string{"a", "b", "c", "d", "e"}
	publishN(t, b, subjects, 40)
	var rec recorder
	var busy sync.Map
	var overlap, concurrent atomic.Int64
	var running atomic.Int64
	e := startEngine(t, b, testEngineConfig("order"), func(ctx context.Context, m *Msg) error {
		if _, loaded := busy.LoadOrStore(m.Subject, true); loaded {
			overlap.Add(1)
		}
		if n := running.Add(1); n > 1 {
			concurrent.Add(1)
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		running.Add(-1)
		busy.Delete(m.Subject)
		rec.add(m)
		return nil
	})
	waitUntil(t, "all handled and acked", func() bool { return rec.n.Load() == 200 && caughtUp(t, b, "order")() })
	if overlap.Load() != 0 {
		t.Fatalf("%d times two messages of one subject were handled at once", overlap.Load())
	}
	if concurrent.Load() == 0 {
		t.Error("subjects were never handled concurrently")
	}
	for _, s := range subjects {
		got := rec.of(schemas.SubjectBOMsPrefix + "t." + s)
		for i, p := range got {
			if p != s+":"+strconv.Itoa(i) {
				t.Fatalf("subject %s: message %d is %q: out of order: %v", s, i, p, got)
			}
		}
	}
	if c := e.Counts(); c.OK != 200 || c.DeadLettered != 0 {
		t.Fatalf("counts %+v", c)
	}
}

// A transient failure is retried in process; the failing subject's later
// messages wait behind it while other subjects flow, and the stage reports
// itself degraded while it keeps failing.
func TestEngineRetriesInOrderAndReportsDegraded(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	publishN(t, b, []string{"bad", "good"}, 5)
	var rec recorder
	var healed atomic.Bool
	var failures atomic.Int64
	e := startEngine(t, b, testEngineConfig("retry"), func(ctx context.Context, m *Msg) error {
		if string(m.Data) == "bad:0" && !healed.Load() {
			failures.Add(1)
			return fmt.Errorf("store unreachable: dial tcp: connection refused (token=s3cr3t)")
		}
		rec.add(m)
		return nil
	})
	waitUntil(t, "the good subject done", func() bool { return len(rec.of(schemas.SubjectBOMsPrefix+"t.good")) == 5 })
	waitUntil(t, "degraded", func() bool { return e.Health().State == StateDegraded })
	if got := rec.of(schemas.SubjectBOMsPrefix + "t.bad"); len(got) != 0 {
		t.Fatalf("later messages of the failing subject overtook it: %v", got)
	}
	if h := e.Health(); !strings.Contains(h.Reason, "connection refused") || strings.Contains(h.Reason, "s3cr3t") {
		t.Fatalf("health reason %q does not say why, or carries the credential", h.Reason)
	}
	healed.Store(true)
	waitUntil(t, "all acked", caughtUp(t, b, "retry"))
	want := []string{"bad:0", "bad:1", "bad:2", "bad:3", "bad:4"}
	if got := rec.of(schemas.SubjectBOMsPrefix + "t.bad"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after healing: %v, want %v", got, want)
	}
	waitUntil(t, "up again", func() bool { return e.Health().State == StateUp })
	if c := e.Counts(); c.Retries == 0 || c.DeadLettered != 0 {
		t.Fatalf("counts %+v", c)
	}
}

// deadLetters reads every dead letter of stage.
func deadLetters(t *testing.T, b *stream.Bus, stage string) []deadletter.Letter {
	t.Helper()
	var out []deadletter.Letter
	if err := deadletter.New(b).List(testContext(t), stage, func(d deadletter.Letter) error {
		out = append(out, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A permanent error dead-letters the message with the reason, its origin
// and its headers, once; the others flow; exhausted attempts do the same.
func TestEngineDeadLettersPermanentAndExhausted(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	subj := schemas.SubjectBOMsPrefix + "t.w"
	for _, d := range []string{"ok1", "refused", "flaky", "ok2"} {
		m := nats.NewMsg(subj)
		m.Data = []byte(d)
		m.Header.Set("Bomstream-Workload", `{"cluster":"t"}`)
		if _, err := b.Writer().Publish(testContext(t), m, "id-"+d); err != nil {
			t.Fatal(err)
		}
	}
	var rec recorder
	cfg := testEngineConfig("dlq")
	cfg.MaxAttempts = 3
	e := startEngine(t, b, cfg, func(ctx context.Context, m *Msg) error {
		switch string(m.Data) {
		case "refused":
			return Permanent(errors.New("400 bad request:\nthe store refused it (Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.c2ln)"))
		case "flaky":
			return errors.New("503")
		}
		rec.add(m)
		return nil
	})
	waitUntil(t, "all settled", caughtUp(t, b, "dlq"))
	if got := rec.of(subj); strings.Join(got, ",") != "ok1,ok2" {
		t.Fatalf("handled %v", got)
	}
	dls := deadLetters(t, b, cfg.Stage)
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dls), dls)
	}
	if d := dls[0]; string(d.Data) != "refused" || !strings.HasPrefix(d.Reason, "400 bad request: the store refused it") ||
		strings.Contains(d.Reason, "eyJhbGciOiJIUzI1NiJ9") || d.Stage != cfg.Stage ||
		d.Stream != schemas.StreamBOMs || d.Subject != subj || d.Seq != 2 || d.Delivered != 1 || d.Time.IsZero() ||
		d.Header.Get("Bomstream-Workload") != `{"cluster":"t"}` || d.Header.Get(jetstream.MsgIDHeader) != "id-refused" {
		t.Fatalf("first dead letter %+v", d)
	}
	if d := dls[1]; string(d.Data) != "flaky" || d.Reason != "after 3 attempts: 503" {
		t.Fatalf("second dead letter %+v", d)
	}
	if c := e.Counts(); c.DeadLettered != 2 || c.OK != 2 || c.Retries != 2 {
		t.Fatalf("counts %+v", c)
	}
	// The dead letter can be read by id and removed.
	got, err := deadletter.New(b).Get(testContext(t), dls[0].ID)
	if err != nil || string(got.Data) != "refused" {
		t.Fatalf("GetDeadLetter: %+v %v", got, err)
	}
	if err := deadletter.New(b).Remove(testContext(t), dls[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := deadletter.New(b).Get(testContext(t), dls[0].ID); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("removed dead letter: %v", err)
	}
}

// A handler call that outlives the attempt timeout is abandoned: its
// workload is retried (and marks the stage degraded) while the other
// workloads flow; when the store answers again, the workload goes through.
func TestEngineAbandonsHungCalls(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	publishN(t, b, []string{"hung", "a", "b", "c"}, 3)
	var rec recorder
	var release atomic.Bool
	cfg := testEngineConfig("hung")
	cfg.AttemptTimeout = 200 * time.Millisecond
	cfg.Concurrency = 2
	e := startEngine(t, b, cfg, func(ctx context.Context, m *Msg) error {
		if strings.HasPrefix(string(m.Data), "hung:") && !release.Load() {
			select {} // a store that never answers and ignores ctx
		}
		rec.add(m)
		return nil
	})
	waitUntil(t, "the other workloads done", func() bool { return rec.n.Load() == 9 })
	waitUntil(t, "degraded", func() bool { return e.Health().State == StateDegraded })
	if h := e.Health(); !strings.Contains(h.Reason, "timed out") {
		t.Fatalf("health %+v does not say why", h)
	}
	release.Store(true)
	waitUntil(t, "the hung workload done", func() bool { return len(rec.of(schemas.SubjectBOMsPrefix+"t.hung")) == 3 })
	if got := rec.of(schemas.SubjectBOMsPrefix + "t.hung"); strings.Join(got, ",") != "hung:0,hung:1,hung:2" {
		t.Fatalf("hung workload order %v", got)
	}
	waitUntil(t, "all acked", caughtUp(t, b, "hung"))
}

// A message delivered MaxDeliver times without being settled (its holders
// crashed) is dead-lettered before it is worked on again, and the handler
// never sees it.
func TestEngineDeadLettersPoisonBeforeWork(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	publishN(t, b, []string{"poison"}, 1)
	cfg := testEngineConfig("poison")
	cfg.MaxDeliver = 2
	var calls sync.Map
	e, err := New(b, cfg, func(ctx context.Context, m *Msg) error {
		calls.Store(string(m.Data), true)
		return nil
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Two holders take the poison message and die without settling it.
	cons, _, err := e.ensureConsumer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := b.Stream(ctx, schemas.StreamBOMs)
	for i := range cfg.MaxDeliver {
		waitUntil(t, fmt.Sprintf("delivery %d", i+1), func() bool {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second), jetstream.FetchPriorityGroup(pinGroup))
			if err != nil {
				return false
			}
			for m := range batch.Messages() {
				if string(m.Data()) == "poison:0" {
					_ = s.UnpinConsumer(ctx, cfg.Durable, pinGroup) // the holder is gone
					return true
				}
				_ = m.Nak()
			}
			_ = s.UnpinConsumer(ctx, cfg.Durable, pinGroup)
			return false
		})
	}
	publishN(t, b, []string{"fine"}, 1)
	runEngine(t, e)
	waitUntil(t, "settled", caughtUp(t, b, cfg.Durable))
	if _, ok := calls.Load("poison:0"); ok {
		t.Fatal("the handler worked on the poison message again")
	}
	if _, ok := calls.Load("fine:0"); !ok {
		t.Fatal("the other message was not handled")
	}
	dls := deadLetters(t, b, cfg.Stage)
	if len(dls) != 1 || string(dls[0].Data) != "poison:0" || !strings.Contains(dls[0].Reason, "poison: delivered 3 times") {
		t.Fatalf("dead letters %+v", dls)
	}
}

// A consumer deleted under a running engine is created again; nothing is
// lost and the engine reports itself down meanwhile, then up.
func TestEngineRecreatesDeletedConsumer(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	ctx := testContext(t)
	publishN(t, b, []string{"x"}, 3)
	var rec recorder
	var redelivered atomic.Int64
	cfg := testEngineConfig("recreate")
	e, err := New(b, cfg, func(ctx context.Context, m *Msg) error {
		if m.Redelivered {
			redelivered.Add(1)
		}
		rec.add(m)
		return nil
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, e)
	waitUntil(t, "first messages", caughtUp(t, b, "recreate"))
	if err := b.Durables().Delete(ctx, schemas.StreamBOMs, "recreate"); err != nil {
		t.Fatal(err)
	}
	publishN(t, b, []string{"y"}, 2)
	waitUntil(t, "re-created and caught up", func() bool {
		return len(rec.of(schemas.SubjectBOMsPrefix+"t.y")) == 2 && caughtUp(t, b, "recreate")()
	})
	// The re-created consumer delivers the history again, flagged as such.
	if got := rec.of(schemas.SubjectBOMsPrefix + "t.x"); len(got) < 6 || redelivered.Load() < 3 {
		t.Fatalf("after re-creation: x handled %v, %d flagged redelivered", got, redelivered.Load())
	}
	if e.Health().State != StateUp {
		t.Fatalf("health after re-creation %+v", e.Health())
	}
}

// Stopping hands back what was fetched and not started; a new engine on the
// same consumer handles it: nothing is lost.
func TestEngineStopLosesNothing(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	publishN(t, b, []string{"a", "b", "c", "d"}, 50)
	var rec recorder
	cfg := testEngineConfig("stop")
	cfg.Concurrency = 1
	slow := func(ctx context.Context, m *Msg) error {
		time.Sleep(2 * time.Millisecond)
		rec.add(m)
		return nil
	}
	e1, err := New(b, cfg, slow, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runEngine(t, e1)
	waitUntil(t, "some handled", func() bool { return rec.n.Load() >= 20 })
	stop()
	s, _ := b.Stream(testContext(t), schemas.StreamBOMs)
	_ = s.UnpinConsumer(testContext(t), cfg.Durable, pinGroup)
	e2, err := New(b, cfg, slow, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, e2)
	waitUntil(t, "all acked", caughtUp(t, b, "stop"))
	for _, subj := range []string{"a", "b", "c", "d"} {
		got := rec.of(schemas.SubjectBOMsPrefix + "t." + subj)
		seen := map[string]bool{}
		for _, p := range got {
			seen[p] = true
		}
		if len(seen) != 50 {
			t.Fatalf("subject %s: %d distinct messages handled, want 50", subj, len(seen))
		}
	}
}

// Replay drives the handler over a range in order, acks nothing and leaves
// the durable consumer alone.
func TestEngineReplay(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	publishN(t, b, []string{"a", "b"}, 10)
	var rec recorder
	e, err := New(b, testEngineConfig("replay"), func(ctx context.Context, m *Msg) error {
		rec.add(m)
		return nil
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last [2]uint64
	n, err := e.Replay(testContext(t), 5, time.Time{}, func(done, total uint64) { last = [2]uint64{done, total} })
	if err != nil {
		t.Fatal(err)
	}
	if n != 16 || last != [2]uint64{16, 16} {
		t.Fatalf("replayed %d, last progress %v", n, last)
	}
	if got := rec.of(schemas.SubjectBOMsPrefix + "t.a"); strings.Join(got, ",") != "a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9" {
		t.Fatalf("a: %v", got)
	}
	if _, js := b.Raw(); js == nil {
		t.Fatal("no jetstream")
	} else if _, err := js.Consumer(testContext(t), schemas.StreamBOMs, "replay"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("replay touched the durable consumer: %v", err)
	}
}

func TestEngineConfigValidate(t *testing.T) {
	bad := Config{Durable: "a.b", MaxInFlight: -1, AckWait: 10 * time.Millisecond, BaseBackoff: time.Minute, MaxBackoff: time.Second,
		StartSeq: 3, StartTime: time.Now()}
	err := bad.Validate("sinks[0].runner")
	for _, want := range []string{"sinks[0].runner.durable", "sinks[0].runner.maxInFlight", "sinks[0].runner.ackWait", "sinks[0].runner.baseBackoff", "sinks[0].runner.startSeq"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if err := (Config{}).Validate("x"); err != nil {
		t.Fatalf("zero config: %v", err)
	}
}

// crashingEngine runs an engine with Claim on its own TCP connection to
// srv's server until its handler has taken the message "until", then drops
// the connection without settling anything: a process killed mid-work.
func crashingEngine(t *testing.T, srv *stream.Bus, cfg Config, until string) {
	t.Helper()
	conn, err := stream.Open(testContext(t), stream.Config{URL: srv.ClientURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := make(chan struct{})
	var once sync.Once
	e, err := New(conn, cfg, func(ctx context.Context, m *Msg) error {
		if string(m.Data) == until {
			once.Do(func() { close(took) })
		}
		<-ctx.Done() // never finishes: the process dies first
		return ctx.Err()
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	select {
	case <-took:
	case <-time.After(time.Minute):
		t.Fatalf("the engine never took %s", until)
	}
	conn.Abort()
	cancel()
}

// After a crash, an engine with Claim takes over at once and gets what the
// dead process held again, in order and before newer messages.
func TestClaimRewindsAfterCrash(t *testing.T) {
	b := openEmbedded(t, stream.Config{Listen: "127.0.0.1:0"})
	publishN(t, b, []string{"a"}, 5)
	cfg := testEngineConfig("claim")
	cfg.Claim = true
	cfg.AckWait = time.Minute // a redelivery by the server alone would come far too late
	crashingEngine(t, b, cfg, "a:0")
	publishN(t, b, []string{"b"}, 1)
	m := nats.NewMsg(schemas.SubjectBOMsPrefix + "t.a")
	m.Data = []byte("a:5")
	if _, err := b.Writer().Publish(testContext(t), m, ""); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	var flagged atomic.Int64
	e, err := New(b, cfg, func(ctx context.Context, m *Msg) error {
		if m.Redelivered {
			flagged.Add(1)
		}
		rec.add(m)
		return nil
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runEngine(t, e)
	waitUntil(t, "all handled", func() bool { return rec.n.Load() == 7 && caughtUp(t, b, "claim")() })
	if got := strings.Join(rec.of(schemas.SubjectBOMsPrefix+"t.a"), ","); got != "a:0,a:1,a:2,a:3,a:4,a:5" {
		t.Fatalf("after the crash: %s", got)
	}
	if flagged.Load() < 5 {
		t.Fatalf("%d messages flagged as redelivered, want at least the 5 the dead process held", flagged.Load())
	}
}

// A message that kills the process every time it is worked on is
// dead-lettered once the poison limit of crashes is reached, although each
// restart rewinds the consumer (and so the server's delivery count).
func TestClaimDeadLettersAMessageThatKeepsCrashingTheProcess(t *testing.T) {
	b := openEmbedded(t, stream.Config{Listen: "127.0.0.1:0"})
	publishN(t, b, []string{"p"}, 2)
	cfg := testEngineConfig("crashloop")
	cfg.Claim = true
	cfg.MaxDeliver = 3
	for range cfg.MaxDeliver + 1 {
		crashingEngine(t, b, cfg, "p:0")
	}
	var rec recorder
	startEngine(t, b, cfg, func(ctx context.Context, m *Msg) error {
		rec.add(m)
		return nil
	})
	waitUntil(t, "settled", caughtUp(t, b, "crashloop"))
	if got := strings.Join(rec.of(schemas.SubjectBOMsPrefix+"t.p"), ","); got != "p:1" {
		t.Fatalf("handled %s, want only p:1", got)
	}
	dls := deadLetters(t, b, cfg.Stage)
	if len(dls) != 1 || string(dls[0].Data) != "p:0" || !strings.Contains(dls[0].Reason, "crashed while working on it") {
		t.Fatalf("dead letters %+v", dls)
	}
}
