package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/sinktest"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// patience bounds every wait; it only fails a test that hangs.
const patience = 90 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	t.Cleanup(cancel)
	return ctx
}

func openBus(t *testing.T, dir string) *stream.Bus {
	t.Helper()
	b, err := stream.Open(testCtx(t), stream.Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFileSink(t *testing.T, name string) *file.Sink {
	t.Helper()
	s, err := file.New(file.Config{Name: name, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fast keeps retries quick in tests.
func fast(cfg Config) Config {
	cfg.BaseBackoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	return cfg
}

func publishBOM(t testing.TB, b *stream.Bus, bom sinks.BOM) uint64 {
	t.Helper()
	m := encode(t, &schemas.BOMMessage{Workload: bom.Workload, ChangeSeq: bom.ChangeSeq, EventTime: bom.Time,
		BomHash: bom.BomHash, InputHash: bom.InputHash, Images: bom.Images, BOM: bom.Body})
	ack, err := b.Writer().Publish(testCtx(t), m, schemas.BOMMsgID(bom.Workload, bom.ChangeSeq))
	if err != nil {
		t.Fatal(err)
	}
	return ack.Seq
}

func publishTombstone(t *testing.T, b *stream.Bus, w schemas.Workload, changeSeq uint64, reason string) uint64 {
	t.Helper()
	m := encode(t, &schemas.BOMMessage{Workload: w, ChangeSeq: changeSeq, Tombstone: reason})
	ack, err := b.Writer().Publish(testCtx(t), m, schemas.BOMMsgID(w, changeSeq))
	if err != nil {
		t.Fatal(err)
	}
	return ack.Seq
}

// encode is bm as the NATS message the transformer publishes.
func encode(t testing.TB, bm *schemas.BOMMessage) *nats.Msg {
	t.Helper()
	h, body, err := bm.Encode()
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(bm.Subject())
	m.Header, m.Data = h, body
	return m
}

// started is a running Runner; stop cancels it and checks Run's result.
type started struct {
	*Runner
	stop func()
}

func start(t *testing.T, b *stream.Bus, s sinks.Sink, cfg Config, reg prometheus.Registerer) started {
	t.Helper()
	r, err := New(b, s, cfg, false, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(patience):
			t.Fatal("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return started{Runner: r, stop: stop}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	bustest.Eventually(t, what, patience, cond)
}

// settled reports whether the durable consumer has been delivered and has
// acked everything on BOMS.
func settled(t *testing.T, b *stream.Bus, durable string) bool {
	done, err := b.Durables().CaughtUp(testCtx(t), schemas.StreamBOMs, durable)
	return err == nil && done
}

func dlqMessages(t *testing.T, b *stream.Bus, sink string) []deadletter.Letter {
	t.Helper()
	var out []deadletter.Letter
	if err := deadletter.New(b).List(testCtx(t), "sink."+sink, func(d deadletter.Letter) error {
		out = append(out, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// replay runs r's replay with opts and fails the test on error.
func replay(t *testing.T, b *stream.Bus, s sinks.Sink, opts ReplayOptions, progress Progress) Stats {
	t.Helper()
	r, err := New(b, s, fast(Config{}), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Replay(testCtx(t), opts, progress)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// metricValue reads a counter or gauge of one sink from reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name, sink string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == sink {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("metric %s{sink=%q} not registered", name, sink)
	return 0
}

func assertOnce(t *testing.T, c *sinktest.Counter, want []sinks.BOM) {
	t.Helper()
	got := c.Exports()
	if len(got) != len(want) {
		t.Errorf("exported %d distinct BOMs, want %d", len(got), len(want))
	}
	for _, b := range want {
		if got[b.BomHash] != 1 {
			t.Errorf("%s@%d exported %d times, want once", b.Workload.Name, b.ChangeSeq, got[b.BomHash])
		}
	}
}

func TestEveryBOMOnceAcrossRestartAndReplay(t *testing.T) {
	dir := t.TempDir()
	b := openBus(t, dir)
	fs := newFileSink(t, "file")
	var boms []sinks.BOM
	for i, name := range []string{"a", "b", "c"} {
		for v := range 3 {
			bom := sinktest.NewBOM(sinktest.Workload(name), uint64(10*i+v+1))
			boms = append(boms, bom)
			publishBOM(t, b, bom)
		}
	}
	// A retried publish is dropped by the stream's dedupe window.
	publishBOM(t, b, boms[0])
	gone := sinktest.Workload("c")
	publishTombstone(t, b, gone, 100, sinks.ReasonDeleted)

	reg := prometheus.NewRegistry()
	c1 := sinktest.NewCounter(fs)
	r1 := start(t, b, c1, Config{}, reg)
	waitFor(t, "first run", func() bool { s := r1.Stats(); return s.Exported == 9 && s.Tombstones == 1 })
	waitFor(t, "acks", func() bool { return settled(t, b, "sink-file") })
	assertOnce(t, c1, boms)
	if ts := c1.Tombstones(); len(ts) != 1 || ts[0].Workload != gone || ts[0].ChangeSeq != 100 || ts[0].Time.IsZero() || ts[0].Reason != sinks.ReasonDeleted {
		t.Fatalf("tombstones %+v", ts)
	}
	if _, err := os.Stat(filepath.Join(fs.Dir(), "dev", "ml", "Deployment", "c", file.LatestFile)); !os.IsNotExist(err) {
		t.Fatalf("a tombstoned workload keeps %s: %v", file.LatestFile, err)
	}
	if got := metricValue(t, reg, "bomstream_sink_exported_total", "file"); got != 9 {
		t.Fatalf("bomstream_sink_exported_total = %v, want 9", got)
	}
	waitFor(t, "bomstream_sink_up 1 while running", func() bool { return metricValue(t, reg, "bomstream_sink_up", "file") == 1 })
	r1.stop()
	if got := metricValue(t, reg, "bomstream_sink_up", "file"); got != 0 {
		t.Fatalf("bomstream_sink_up = %v after stop", got)
	}
	b.Close()

	// Restart: same data dir, same durable, same sink directory.
	b = openBus(t, dir)
	t.Cleanup(b.Close)
	c2 := sinktest.NewCounter(fs)
	r2 := start(t, b, c2, Config{}, reg) // the metric families are reused
	fresh := sinktest.NewBOM(sinktest.Workload("d"), 200)
	publishBOM(t, b, fresh)
	waitFor(t, "fresh BOM after restart", func() bool { return r2.Stats().Exported == 1 })
	waitFor(t, "acks after restart", func() bool { return settled(t, b, "sink-file") })
	assertOnce(t, c2, []sinks.BOM{fresh})
	if c2.Calls() != 1 || len(c2.Tombstones()) != 0 {
		t.Fatalf("restart reached the sink again: %d export calls, %d tombstones", c2.Calls(), len(c2.Tombstones()))
	}
	r2.stop()
	boms = append(boms, fresh)

	// Replay into the same sink: the ledger holds everything.
	c3 := sinktest.NewCounter(fs)
	var reports int
	st := replay(t, b, c3, ReplayOptions{}, func(done, total uint64, rate float64) {
		reports++
		if done > total || rate < 0 {
			t.Errorf("progress %d/%d at %f", done, total, rate)
		}
	})
	if c3.Calls() != 0 || st.Exported != 0 || st.SkippedDuplicate != 11 || reports == 0 {
		t.Fatalf("replay into the same sink: %d calls, stats %+v, %d progress reports", c3.Calls(), st, reports)
	}

	// Replay into a new sink: every BOM once, and again nothing.
	fs2 := newFileSink(t, "file2")
	c4 := sinktest.NewCounter(fs2)
	st = replay(t, b, c4, ReplayOptions{}, nil)
	assertOnce(t, c4, boms)
	if st.Exported != 10 || st.Tombstones != 1 || len(c4.Tombstones()) != 1 {
		t.Fatalf("replay into a new sink: stats %+v", st)
	}
	c5 := sinktest.NewCounter(fs2)
	if st = replay(t, b, c5, ReplayOptions{}, nil); c5.Calls() != 0 || st.SkippedDuplicate != 11 {
		t.Fatalf("second replay: %+v, %d calls", st, c5.Calls())
	}

	// The store is wiped: replay --ignore-ledger rebuilds it, every version once.
	if err := os.RemoveAll(fs2.Dir()); err != nil {
		t.Fatal(err)
	}
	wiped, err := file.New(file.Config{Name: "file2", Dir: fs2.Dir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c6 := sinktest.NewCounter(wiped)
	st = replay(t, b, c6, ReplayOptions{IgnoreLedger: true}, nil)
	assertOnce(t, c6, boms)
	if st.Exported != 10 || st.Tombstones != 1 {
		t.Fatalf("replay --ignore-ledger: stats %+v", st)
	}
	if _, err := os.Stat(filepath.Join(fs2.Dir(), "dev", "ml", "Deployment", "d", file.LatestFile)); err != nil {
		t.Fatalf("rebuilt store: %v", err)
	}
}

func TestReplayFromSeq(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	var seqs []uint64
	var boms []sinks.BOM
	for i := 1; i <= 5; i++ {
		bom := sinktest.NewBOM(sinktest.Workload(fmt.Sprintf("w%d", i)), uint64(i))
		boms = append(boms, bom)
		seqs = append(seqs, publishBOM(t, b, bom))
	}
	c := sinktest.NewCounter(newFileSink(t, "partial"))
	st := replay(t, b, c, ReplayOptions{StartSeq: seqs[2]}, nil)
	assertOnce(t, c, boms[2:])
	if st.Exported != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// flaky fails its first n Export calls with a transient error.
type flaky struct {
	sinks.Sink
	n atomic.Int64
}

func (f *flaky) Export(ctx context.Context, b sinks.BOM) error {
	if f.n.Add(-1) >= 0 {
		return errors.New("service unavailable")
	}
	return f.Sink.Export(ctx, b)
}

func TestTransientErrorsAreRetried(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	f := &flaky{Sink: newFileSink(t, "flaky")}
	f.n.Store(5)
	c := sinktest.NewCounter(f)
	var boms []sinks.BOM
	for i := 1; i <= 6; i++ {
		bom := sinktest.NewBOM(sinktest.Workload(fmt.Sprintf("w%d", i%3)), uint64(i))
		boms = append(boms, bom)
		publishBOM(t, b, bom)
	}
	r := start(t, b, c, fast(Config{}), nil)
	waitFor(t, "exports", func() bool { return r.Stats().Exported == 6 })
	waitFor(t, "acks", func() bool { return settled(t, b, "sink-flaky") })
	assertOnce(t, c, boms)
	if st := r.Stats(); st.Retries != 5 || st.DeadLettered != 0 {
		t.Fatalf("stats %+v, want 5 retries and no DLQ", st)
	}
}

// selective fails or panics for chosen workload names.
type selective struct {
	sinks.Sink
	fail map[string]func() error
}

func (s *selective) Export(ctx context.Context, b sinks.BOM) error {
	if f, ok := s.fail[b.Workload.Name]; ok {
		return f()
	}
	return s.Sink.Export(ctx, b)
}

func TestFailuresGoToTheDLQAndTheRestFlows(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	s := &selective{Sink: newFileSink(t, "picky"), fail: map[string]func() error{
		"rejected": func() error { return fmt.Errorf("upload: %w", sinks.Permanent(errors.New("400 bad bom"))) },
		"down":     func() error { return errors.New("503 " + strings.Repeat("x", 3000)) },
		"boom":     func() error { panic("sink bug") },
	}}
	c := sinktest.NewCounter(s)
	var good []sinks.BOM
	failing := map[string]sinks.BOM{}
	for i, name := range []string{"ok1", "rejected", "down", "boom", "ok2"} {
		bom := sinktest.NewBOM(sinktest.Workload(name), uint64(i+1))
		publishBOM(t, b, bom)
		if strings.HasPrefix(name, "ok") {
			good = append(good, bom)
		} else {
			failing[name] = bom
		}
	}
	// A message that breaks the contract.
	bad := nats.NewMsg(schemas.SubjectBOMsPrefix + "dev.nohdr")
	bad.Data = []byte("{}")
	badSeq, err := b.Writer().Publish(testCtx(t), bad, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fast(Config{})
	cfg.MaxAttempts = 3
	r := start(t, b, c, cfg, nil)
	waitFor(t, "exports and dead letters", func() bool { s := r.Stats(); return s.Exported == 2 && s.DeadLettered == 4 })
	waitFor(t, "acks", func() bool { return settled(t, b, "sink-picky") })
	assertOnce(t, c, good)
	if st := r.Stats(); st.Retries != 2 {
		t.Fatalf("stats %+v, want 2 retries (the 3 attempts of \"down\")", st)
	}

	reasons := map[string]string{}
	for _, d := range dlqMessages(t, b, "picky") {
		if len(d.Reason) > deadletter.MaxReasonBytes {
			t.Errorf("reason of %d bytes", len(d.Reason))
		}
		orig, err := b.Reader().LastMsg(testCtx(t), schemas.StreamBOMs, d.Subject)
		if err != nil || orig == nil {
			t.Fatalf("dlq seq %d: %v", d.Seq, err)
		}
		if orig.Sequence == d.Seq && string(orig.Data) != string(d.Data) {
			t.Errorf("dlq message for seq %d does not carry the original body", d.Seq)
		}
		if bm, err := schemas.DecodeBOMMessage(d.Subject, d.Header, d.Data); err == nil {
			w := bm.Workload
			if bm.BomHash != failing[w.Name].BomHash {
				t.Errorf("dlq message for %s lost its bom hash header", w.Name)
			}
			reasons[w.Name] = d.Reason
		} else {
			if d.Seq != badSeq.Seq {
				t.Errorf("unexpected dlq message for seq %d", d.Seq)
			}
			reasons["bad"] = d.Reason
		}
	}
	for name, want := range map[string]string{
		"rejected": "upload: 400 bad bom",
		"down":     "after 3 attempts: 503 xxx",
		"boom":     "handler panicked: sink bug",
		"bad":      "bad message: header Bomstream-Change-Seq",
	} {
		if !strings.HasPrefix(reasons[name], want) {
			t.Errorf("reason for %s = %q, want prefix %q", name, reasons[name], want)
		}
	}

	// The runner survived the panic and keeps exporting.
	later := sinktest.NewBOM(sinktest.Workload("ok3"), 50)
	publishBOM(t, b, later)
	waitFor(t, "export after a panic", func() bool { return c.Exports()[later.BomHash] == 1 })
}

func TestLatestOnlySkipsSuperseded(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	a := sinktest.Workload("a")
	a1, a2, a3 := sinktest.NewBOM(a, 10), sinktest.NewBOM(a, 20), sinktest.NewBOM(a, 30)
	b4 := sinktest.NewBOM(sinktest.Workload("b"), 40)
	for _, bom := range []sinks.BOM{a1, a2, a3, b4} {
		publishBOM(t, b, bom)
	}
	c := sinktest.NewCounter(newFileSink(t, "latest"))
	yes := true
	r := start(t, b, c, Config{LatestOnly: &yes}, nil)
	waitFor(t, "latest exports", func() bool { s := r.Stats(); return s.Exported == 2 && s.SkippedSuperseded == 2 })
	assertOnce(t, c, []sinks.BOM{a3, b4})

	// An older change arriving after a newer one was exported is skipped
	// even though it is now the last message on its subject.
	stale := sinktest.NewBOM(a, 15)
	publishBOM(t, b, stale)
	waitFor(t, "stale skip", func() bool { return r.Stats().SkippedDuplicate == 1 })
	waitFor(t, "acks", func() bool { return settled(t, b, "sink-latest") })
	assertOnce(t, c, []sinks.BOM{a3, b4})

	// A tombstone supersedes earlier BOMs and reaches the sink.
	publishBOM(t, b, sinktest.NewBOM(a, 50))
	publishTombstone(t, b, a, 60, sinks.ReasonNotServing)
	waitFor(t, "tombstone", func() bool { return r.Stats().Tombstones == 1 })
	if got := c.Tombstones(); len(got) != 1 || got[0].ChangeSeq != 60 || got[0].Reason != sinks.ReasonNotServing {
		t.Fatalf("tombstones %+v", got)
	}
}

// Defect: latest-only compared stream sequences, so a BOM of an older
// change stored after a newer one became "latest". Versions are ordered by
// change sequence: whatever the order on BOMS, the newest change wins.
func TestLatestOnlyNeverRegressesOnReorderedBOMs(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	w := sinktest.Workload("reordered")
	newer, older := sinktest.NewBOM(w, 20), sinktest.NewBOM(w, 10)
	publishBOM(t, b, newer) // stored first
	publishBOM(t, b, older) // stored last: the last message on the subject
	fs := newFileSink(t, "latest")
	c := sinktest.NewCounter(fs)
	yes := true
	r := start(t, b, c, Config{LatestOnly: &yes}, nil)
	waitFor(t, "settled", func() bool { return settled(t, b, "sink-latest") })
	assertOnce(t, c, []sinks.BOM{newer})
	got, err := os.ReadFile(filepath.Join(fs.Dir(), "dev", "ml", "Deployment", "reordered", file.LatestFile))
	if err != nil || schemas.BomHash(got) != newer.BomHash {
		t.Fatalf("latest is not the newer change (%v)", err)
	}
	if st := r.Stats(); st.Exported != 1 || st.SkippedDuplicate != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Version identity is (cluster, uid, change sequence): the same bytes at a
// later change (A -> B -> A, a revival after a tombstone) are exported again.
func TestSameBytesAtALaterChangeAreANewVersion(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	w := sinktest.Workload("aba")
	a, bb := sinktest.NewBOM(w, 10), sinktest.NewBOM(w, 20)
	again := a
	again.ChangeSeq, again.StreamSeq = 30, 30
	revived := a
	revived.ChangeSeq, revived.StreamSeq = 50, 50
	publishBOM(t, b, a)
	publishBOM(t, b, bb)
	publishBOM(t, b, again)
	publishTombstone(t, b, w, 40, sinks.ReasonDeleted)
	publishBOM(t, b, revived)
	c := sinktest.NewCounter(newFileSink(t, "aba"))
	r := start(t, b, c, Config{}, nil)
	waitFor(t, "settled", func() bool { return settled(t, b, "sink-aba") })
	if st := r.Stats(); st.Exported != 4 || st.Tombstones != 1 {
		t.Fatalf("stats %+v, want 4 exports (A, B, A, A revived) and 1 tombstone", st)
	}
	if got := c.Exports()[a.BomHash]; got != 3 {
		t.Fatalf("A's bytes exported %d times, want 3", got)
	}
}

// A ledger written by another process (a replica, a replay) is read again
// when a conditional put finds it changed: the sink neither regresses nor
// skips a newer version.
func TestLedgerWrittenByAnotherProcess(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	w := sinktest.Workload("shared")
	fs := newFileSink(t, "shared")
	// This runner reads the (empty) ledger now.
	mine, err := New(b, sinktest.NewCounter(fs), fast(Config{}), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another process applies change 20.
	publishBOM(t, b, sinktest.NewBOM(w, 20))
	other := sinktest.NewCounter(fs)
	if st := replay(t, b, other, ReplayOptions{}, nil); st.Exported != 1 {
		t.Fatalf("other process: %+v", st)
	}
	// Change 30 reaches this runner, whose view still says nothing.
	v30 := sinktest.NewBOM(w, 30)
	publishBOM(t, b, v30)
	st, err := mine.Replay(testCtx(t), ReplayOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exported != 2 { // 20 again (its view was empty: idempotent) and 30
		t.Fatalf("stats %+v", st)
	}
	raw, _, ok, err := mine.ledger.Get(testCtx(t), ledgerKey(w))
	if err != nil || !ok {
		t.Fatalf("ledger: %v %v", ok, err)
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil || e.ChangeSeq != 30 || e.BomHash != v30.BomHash {
		t.Fatalf("ledger entry %s (%v), want change 30", raw, err)
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	bad := Config{}
	bad.Durable, bad.Concurrency, bad.AckWait = "a.b", -1, time.Millisecond
	err := bad.Validate("sinks[2].runner")
	for _, want := range []string{"sinks[2].runner.durable", "sinks[2].runner.concurrency", "sinks[2].runner.ackWait"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error naming %s", err, want)
		}
	}
	if err := (Config{}).Validate("x"); err != nil {
		t.Fatal(err)
	}
	if got := (Config{}).durable("gcs"); got != "sink-gcs" {
		t.Fatalf("default durable %q", got)
	}
}

func TestLedgerKeys(t *testing.T) {
	if got := ledgerKey(schemas.Workload{Cluster: "prod~eu", UID: "0b6f-11"}); got != "w.=70726f647e6575.0b6f-11" {
		t.Fatalf("key %s", got)
	}
	if got := ledgerKey(schemas.Workload{Cluster: "dev", UID: "abc"}); got != "w.dev.abc" {
		t.Fatalf("key %s", got)
	}
}

// gate blocks Export until released or until its context ends.
type gate struct {
	sinks.Sink
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Export(ctx context.Context, b sinks.BOM) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
		return g.Sink.Export(ctx, b)
	case <-ctx.Done():
		return fmt.Errorf("export: %w", ctx.Err())
	}
}

func TestCancelDrainsInFlight(t *testing.T) {
	b := openBus(t, t.TempDir())
	t.Cleanup(b.Close)
	fs := newFileSink(t, "gated")

	// Run is canceled while Export is in hand; the export completes before
	// Run returns.
	g := &gate{Sink: fs, entered: make(chan struct{}, 1), release: make(chan struct{})}
	c := sinktest.NewCounter(g)
	r := start(t, b, c, Config{}, nil)
	first := sinktest.NewBOM(sinktest.Workload("first"), 1)
	publishBOM(t, b, first)
	<-g.entered
	stopped := make(chan struct{})
	go func() { r.stop(); close(stopped) }()
	close(g.release)
	<-stopped
	if st := r.Stats(); st.Exported != 1 {
		t.Fatalf("in-flight export not drained: %+v", st)
	}

	// An export that outlives DrainTimeout is interrupted and handed back,
	// then exported by the next runner.
	g2 := &gate{Sink: fs, entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := Config{}
	cfg.DrainTimeout = 10 * time.Millisecond
	r2 := start(t, b, sinktest.NewCounter(g2), cfg, nil)
	second := sinktest.NewBOM(sinktest.Workload("second"), 2)
	publishBOM(t, b, second)
	<-g2.entered
	r2.stop()
	if st := r2.Stats(); st.Exported != 0 || st.DeadLettered != 0 {
		t.Fatalf("interrupted export was not handed back: %+v", st)
	}
	c3 := sinktest.NewCounter(fs)
	r3 := start(t, b, c3, Config{}, nil)
	waitFor(t, "handed-back export", func() bool { return r3.Stats().Exported == 1 })
	assertOnce(t, c3, []sinks.BOM{second})
}

func TestLedgerKeyRoundTrip(t *testing.T) {
	for _, w := range []schemas.Workload{
		{Cluster: "prod-1", UID: "0b1c2d3e-aaaa"},
		{Cluster: "eu.west", UID: "uid with spaces"},
	} {
		a, ok := parseLedgerKey(ledgerKey(w))
		if !ok || a.Cluster != w.Cluster || a.UID != w.UID {
			t.Errorf("parseLedgerKey(%q) = %+v, %v; want %s/%s", ledgerKey(w), a, ok, w.Cluster, w.UID)
		}
	}
	for _, k := range []string{"sha256.abc", "w.only", "w.a.b.c", "w.=zz.u"} {
		if _, ok := parseLedgerKey(k); ok {
			t.Errorf("parseLedgerKey(%q) read a key ledgerKey never writes", k)
		}
	}
}
