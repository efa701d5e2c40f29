package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer"
)

// testRenderer is the narrowest seam: a deterministic Render whose behaviour
// the event's first image picks ("nginx" skips, "fail" errors, "panic"
// panics, "block" waits on the release channel), counting calls per event id.
type testRenderer struct {
	mu      sync.Mutex
	calls   map[string]int
	started chan string   // optional: receives the id of each render
	release chan struct{} // closed to let "block" renders finish
}

func newTestRenderer() *testRenderer {
	return &testRenderer{calls: map[string]int{}, started: make(chan string, 1000), release: make(chan struct{})}
}

func (r *testRenderer) Render(ev schemas.WorkloadChange) (transformer.Result, error) {
	r.mu.Lock()
	r.calls[ev.ID]++
	r.mu.Unlock()
	r.started <- ev.ID
	image := ev.Data.Inputs.Components[0].Containers[0].Image
	switch image {
	case "nginx":
		return transformer.Result{Workload: ev.Data.Workload, Skipped: "no runtime and no model"}, nil
	case "fail":
		return transformer.Result{}, errors.New("model rule table broken")
	case "panic":
		var m map[string]int
		m["boom"]++ // a nil-map write, as a real bug would
	case "block":
		<-r.release
	}
	bom, err := schemas.CanonicalJSON(map[string]string{"bomFormat": "CycloneDX", "workload": ev.Data.Workload.UID, "image": image, "time": ev.Time.String()})
	if err != nil {
		return transformer.Result{}, err
	}
	return transformer.Result{Workload: ev.Data.Workload, BOM: bom, BomHash: schemas.BomHash(bom)}, nil
}

func (r *testRenderer) callsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}

func (r *testRenderer) totalCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

func workload(uid string) schemas.Workload {
	return schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "w-" + uid, UID: uid}
}

func event(t *testing.T, w schemas.Workload, image string) schemas.WorkloadChange {
	t.Helper()
	ev, err := schemas.NewObserved("test", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{{Name: "main", Locator: "spec.template",
			Containers: []schemas.Container{{Name: "c", Locator: "spec.template.spec.containers[0]", Image: image}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func openBus(t *testing.T, cfg stream.Config) *stream.Bus {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := stream.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// run starts s and returns a function that cancels it and waits for Run to return.
func run(t *testing.T, s *Service) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
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
				t.Error("Run did not return within a minute of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func newService(t *testing.T, b *stream.Bus, r Renderer, cfg Config, reg prometheus.Registerer) *Service {
	t.Helper()
	s, err := New(b, r, cfg, zaptest.NewLogger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func publish(t *testing.T, b *stream.Bus, ev schemas.WorkloadChange) uint64 {
	t.Helper()
	seq, published, err := b.PublishChange(context.Background(), ev)
	if err != nil || !published {
		t.Fatalf("publish %s: published %v err %v", ev.ID, published, err)
	}
	return seq
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reports whether the consumer has delivered and resolved everything.
func settled(t *testing.T, b *stream.Bus, durable string) bool {
	t.Helper()
	done, err := b.CaughtUp(context.Background(), schemas.StreamChanges, durable)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func messages(t *testing.T, b *stream.Bus, streamName, subject string) []*jetstream.RawStreamMsg {
	t.Helper()
	var out []*jetstream.RawStreamMsg
	if err := b.Messages(context.Background(), streamName, subject, 0, func(m *jetstream.RawStreamMsg) error {
		out = append(out, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			if m.GetCounter() != nil {
				sum += m.GetCounter().GetValue()
			}
			if m.GetHistogram() != nil {
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return sum
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestPublishesBOMWithHeadersAndMsgID(t *testing.T) {
	b := openBus(t, stream.Config{})
	r := newTestRenderer()
	reg := prometheus.NewRegistry()
	s := newService(t, b, r, Config{}, reg)
	if s.Ready() {
		t.Fatal("ready before Run")
	}
	w := workload("u1")
	ev := event(t, w, "vllm/vllm-openai:v0.8.5")
	changeSeq := publish(t, b, ev)
	skippedSeq := publish(t, b, event(t, workload("plain"), "nginx"))
	run(t, s)

	eventually(t, "both events are acked", func() bool { return settled(t, b, DefaultDurable) })
	if !s.Ready() {
		t.Fatal("not ready while running")
	}
	got := messages(t, b, schemas.StreamBOMs, "")
	if len(got) != 1 {
		t.Fatalf("BOMS holds %d messages, want 1 (the nginx workload has no BOM)", len(got))
	}
	m := got[0]
	want, _ := r.Render(ev)
	if m.Subject != schemas.BOMsSubject(w) || string(m.Data) != string(want.BOM) {
		t.Fatalf("bom on %s: %s, want on %s: %s", m.Subject, m.Data, schemas.BOMsSubject(w), want.BOM)
	}
	hash := schemas.BomHash(m.Data)
	for k, v := range map[string]string{
		schemas.HeaderBomHash:   hash,
		schemas.HeaderInputHash: ev.Data.InputHash,
		schemas.HeaderChangeSeq: fmt.Sprint(changeSeq),
		schemas.HeaderWorkload:  schemas.WorkloadHeader(w),
		jetstream.MsgIDHeader:   hash,
	} {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if changeSeq == skippedSeq {
		t.Fatal("two events share a sequence")
	}
	for name, want := range map[string]float64{
		"bomstream_transformer_rendered_total": 1,
		"bomstream_transformer_skipped_total":  1,
		"bomstream_transformer_dlq_total":      0,
		"bomstream_transformer_render_seconds": 2,
	} {
		if got := counter(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

func TestRedeliveredEventDoesNotDuplicateBOM(t *testing.T) {
	b := openBus(t, stream.Config{})
	r := newTestRenderer()
	w := workload("u1")
	ev := event(t, w, "vllm:a")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	// The same event stored twice (as a replay or a second collector would);
	// both render to the same bytes.
	for range 2 {
		if _, err := b.JS.Publish(context.Background(), schemas.ChangesSubject(w), data); err != nil {
			t.Fatal(err)
		}
	}
	run(t, newService(t, b, r, Config{}, nil))
	eventually(t, "both events are acked", func() bool { return settled(t, b, DefaultDurable) })
	if n := r.callsOf(ev.ID); n != 2 {
		t.Fatalf("rendered %d times, want 2", n)
	}
	got := messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))
	if len(got) != 1 {
		t.Fatalf("BOMS holds %d messages for the workload, want 1", len(got))
	}
	if seq := got[0].Header.Get(schemas.HeaderChangeSeq); seq != "1" {
		t.Fatalf("kept BOM comes from change %s, want 1", seq)
	}
}

func TestTombstoneIsPublished(t *testing.T) {
	b := openBus(t, stream.Config{})
	w := workload("gone")
	publish(t, b, event(t, w, "vllm:a"))
	delSeq := publish(t, b, schemas.NewDeleted("test", time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), w))
	reg := prometheus.NewRegistry()
	run(t, newService(t, b, newTestRenderer(), Config{}, reg))
	eventually(t, "both events are acked", func() bool { return settled(t, b, DefaultDurable) })

	got := messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))
	if len(got) != 2 {
		t.Fatalf("BOMS holds %d messages, want a BOM and a tombstone", len(got))
	}
	ts := got[1]
	body, _ := schemas.CanonicalJSON(w)
	if string(ts.Data) != string(body) {
		t.Fatalf("tombstone body %s, want %s", ts.Data, body)
	}
	for k, v := range map[string]string{
		schemas.HeaderTombstone: "true",
		schemas.HeaderWorkload:  schemas.WorkloadHeader(w),
		schemas.HeaderChangeSeq: fmt.Sprint(delSeq),
		jetstream.MsgIDHeader:   schemas.TombstoneMsgID(w, delSeq),
	} {
		if got := ts.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if got[0].Header.Get(schemas.HeaderTombstone) != "" {
		t.Error("the BOM is marked as a tombstone")
	}
	if n := counter(t, reg, "bomstream_transformer_tombstones_total"); n != 1 {
		t.Errorf("tombstones_total = %v", n)
	}
}

func dlqMessages(t *testing.T, b *stream.Bus) []*jetstream.RawStreamMsg {
	return messages(t, b, schemas.StreamDLQ, schemas.DLQSubject(DefaultStage))
}

func TestMalformedEventGoesToDLQAndOthersFlow(t *testing.T) {
	b := openBus(t, stream.Config{})
	bad := schemas.ChangesSubject(workload("bad"))
	if _, err := b.JS.Publish(context.Background(), bad, []byte(`{"specversion": "1.0", "data": `)); err != nil {
		t.Fatal(err)
	}
	// Valid JSON without an identity is as useless as broken JSON.
	if _, err := b.JS.Publish(context.Background(), bad, []byte(`{"type":"dev.bomstream.workload.observed.v1"}`)); err != nil {
		t.Fatal(err)
	}
	w := workload("good")
	publish(t, b, event(t, w, "vllm:a"))
	r := newTestRenderer()
	reg := prometheus.NewRegistry()
	run(t, newService(t, b, r, Config{}, reg))
	eventually(t, "all events are resolved", func() bool { return settled(t, b, DefaultDurable) })

	dl := dlqMessages(t, b)
	if len(dl) != 2 {
		t.Fatalf("DLQ holds %d messages, want 2", len(dl))
	}
	if got := string(dl[0].Data); got != `{"specversion": "1.0", "data": ` {
		t.Errorf("dead letter body %q is not the original", got)
	}
	if reason := dl[0].Header.Get(schemas.HeaderReason); !strings.Contains(reason, "parse change event at seq 1") {
		t.Errorf("reason %q does not say what failed", reason)
	}
	if reason := dl[1].Header.Get(schemas.HeaderReason); !strings.Contains(reason, "identity incomplete") {
		t.Errorf("reason %q does not say what failed", reason)
	}
	if dl[0].Header.Get(stream.HeaderDLQSubject) != bad || dl[0].Header.Get(stream.HeaderDLQSeq) != "1" {
		t.Errorf("dead letter source headers %v", dl[0].Header)
	}
	if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))) != 1 {
		t.Error("the good event behind the bad ones produced no BOM")
	}
	if r.totalCalls() != 1 {
		t.Errorf("renderer called %d times, want once (for the good event)", r.totalCalls())
	}
	if n := counter(t, reg, "bomstream_transformer_dlq_total"); n != 2 {
		t.Errorf("dlq_total = %v, want 2", n)
	}
}

func TestRenderErrorIsRetriedThenDeadLetteredWhileOthersFlow(t *testing.T) {
	b := openBus(t, stream.Config{})
	failing := event(t, workload("f"), "fail")
	publish(t, b, failing)
	var good []schemas.WorkloadChange
	for i := range 3 {
		ev := event(t, workload(fmt.Sprint("g", i)), "vllm:a")
		publish(t, b, ev)
		good = append(good, ev)
	}
	r := newTestRenderer()
	reg := prometheus.NewRegistry()
	run(t, newService(t, b, r, Config{MaxDeliver: 3, RetryDelay: 10 * time.Millisecond}, reg))
	eventually(t, "all events are resolved", func() bool { return settled(t, b, DefaultDurable) })

	if n := r.callsOf(failing.ID); n != 3 {
		t.Errorf("failing event rendered %d times, want MaxDeliver = 3", n)
	}
	for _, ev := range good {
		if n := r.callsOf(ev.ID); n != 1 {
			t.Errorf("good event %s rendered %d times", ev.ID, n)
		}
		if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(ev.Data.Workload))) != 1 {
			t.Errorf("no BOM for %s behind the failing event", ev.ID)
		}
	}
	dl := dlqMessages(t, b)
	if len(dl) != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", len(dl))
	}
	reason := dl[0].Header.Get(schemas.HeaderReason)
	if !strings.Contains(reason, "after 3 deliveries") || !strings.Contains(reason, "model rule table broken") {
		t.Errorf("reason %q", reason)
	}
	if n := counter(t, reg, "bomstream_transformer_retries_total"); n != 2 {
		t.Errorf("retries_total = %v, want 2", n)
	}
}

func TestRendererPanicIsDeadLetteredAndProcessLives(t *testing.T) {
	b := openBus(t, stream.Config{})
	p := event(t, workload("p"), "panic")
	publish(t, b, p)
	after := event(t, workload("after"), "vllm:a")
	publish(t, b, after)
	r := newTestRenderer()
	run(t, newService(t, b, r, Config{}, nil))
	eventually(t, "all events are resolved", func() bool { return settled(t, b, DefaultDurable) })

	if n := r.callsOf(p.ID); n != 1 {
		t.Errorf("panicking event rendered %d times, want once (a panic is permanent)", n)
	}
	dl := dlqMessages(t, b)
	if len(dl) != 1 || !strings.Contains(dl[0].Header.Get(schemas.HeaderReason), "renderer panicked") {
		t.Fatalf("DLQ %d messages, reason %q", len(dl), dl[0].Header.Get(schemas.HeaderReason))
	}
	if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(after.Data.Workload))) != 1 {
		t.Error("no BOM for the event after the panic")
	}
}

func TestTwoInstancesShareTheConsumer(t *testing.T) {
	// Two processes' worth: two connections, one through TCP.
	b1 := openBus(t, stream.Config{Listen: "127.0.0.1:-1"})
	b2 := openBus(t, stream.Config{URL: b1.ClientURL()})
	r := newTestRenderer()
	const n = 40
	var ids []string
	for i := range n {
		ev := event(t, workload(fmt.Sprint("w", i)), fmt.Sprint("vllm:", i))
		publish(t, b1, ev)
		ids = append(ids, ev.ID)
	}
	s1 := newService(t, b1, r, Config{Concurrency: 2}, prometheus.NewRegistry())
	s2 := newService(t, b2, r, Config{Concurrency: 2}, prometheus.NewRegistry())
	run(t, s1)
	run(t, s2)
	eventually(t, "all events are resolved", func() bool { return settled(t, b1, DefaultDurable) })
	for _, id := range ids {
		if c := r.callsOf(id); c != 1 {
			t.Errorf("event %s rendered %d times, want once", id, c)
		}
	}
	if got := len(messages(t, b1, schemas.StreamBOMs, "")); got != n {
		t.Fatalf("BOMS holds %d messages, want %d", got, n)
	}
}

func TestCancelFinishesEventInFlight(t *testing.T) {
	b := openBus(t, stream.Config{})
	r := newTestRenderer()
	w := workload("slow")
	ev := event(t, w, "block")
	publish(t, b, ev)
	s := newService(t, b, r, Config{}, nil)
	stop := run(t, s)
	select {
	case <-r.started:
	case <-time.After(time.Minute):
		t.Fatal("render never started")
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	// Run must wait for the render in flight rather than abandon it.
	select {
	case <-stopped:
		t.Fatal("Run returned while an event was still rendering")
	case <-time.After(200 * time.Millisecond):
	}
	close(r.release)
	<-stopped
	if s.Ready() {
		t.Error("ready after Run returned")
	}
	if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))) != 1 {
		t.Fatal("the event in flight at cancel produced no BOM")
	}
	if !settled(t, b, DefaultDurable) {
		t.Fatal("the event in flight at cancel was not acked")
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Durable: "a.b"}, "transformer.durable"},
		{Config{Stage: "x y"}, "transformer.stage"},
		{Config{MaxDeliver: -1}, "transformer.maxDeliver"},
		{Config{AckWait: -time.Second}, "transformer.ackWait"},
		{Config{Concurrency: 1000}, "transformer.concurrency"},
		{Config{RetryDelay: -1}, "transformer.retryDelay"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
	d := Config{}.withDefaults()
	if d.Durable != "transformer" || d.MaxDeliver != 5 || d.Concurrency != 1 || d.Stage != "transformer" || d.AckWait <= 0 {
		t.Fatalf("defaults %+v", d)
	}
}

func TestBackoffDoublesAndCaps(t *testing.T) {
	s := &Service{cfg: Config{RetryDelay: time.Second, MaxRetryDelay: 5 * time.Second}.withDefaults()}
	var got []time.Duration
	for n := uint64(1); n <= 5; n++ {
		got = append(got, s.backoff(n))
	}
	if fmt.Sprint(got) != "[1s 2s 4s 5s 5s]" {
		t.Fatalf("backoff %v", got)
	}
}

func TestNewRejectsDuplicateRegistration(t *testing.T) {
	b := openBus(t, stream.Config{})
	reg := prometheus.NewRegistry()
	newService(t, b, newTestRenderer(), Config{}, reg)
	if _, err := New(b, newTestRenderer(), Config{}, nil, reg); err == nil {
		t.Fatal("second registration on one registry accepted")
	}
}
