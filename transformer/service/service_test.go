package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/engine"
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
	if strings.HasPrefix(image, "nginx") {
		image = "nginx"
	}
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

func openBus(t *testing.T, cfg stream.Config) *stream.Bus { return bustest.Open(t, cfg) }

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
	seq, published, err := changelog.New(b).PublishChange(context.Background(), ev)
	if err != nil || !published {
		t.Fatalf("publish %s: published %v err %v", ev.ID, published, err)
	}
	return seq
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	bustest.Eventually(t, what, time.Minute, cond)
}

// settled reports whether the consumer has delivered and resolved everything.
func settled(t *testing.T, b *stream.Bus, durable string) bool {
	t.Helper()
	done, err := b.Durables().CaughtUp(context.Background(), schemas.StreamChanges, durable)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func messages(t *testing.T, b *stream.Bus, streamName, subject string) []*jetstream.RawStreamMsg {
	t.Helper()
	var out []*jetstream.RawStreamMsg
	if err := b.Reader().Messages(context.Background(), streamName, subject, 0, func(m *jetstream.RawStreamMsg) error {
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
	w := workload("u1")
	ev := event(t, w, "vllm/vllm-openai:v0.8.5")
	ev.Data.Inputs.Digests = []schemas.ImageDigest{{Image: "vllm/vllm-openai:v0.8.5", Digest: "sha256:" + strings.Repeat("a", 64)}}
	ev, _ = schemas.NewObserved(ev.Source, ev.Time.Add(123*time.Millisecond), ev.Data.Inputs)
	changeSeq := publish(t, b, ev)
	skippedSeq := publish(t, b, event(t, workload("plain"), "nginx"))
	run(t, s)

	eventually(t, "both events are acked", func() bool { return settled(t, b, DefaultDurable) })
	if s.Health().State != engine.StateUp {
		t.Fatalf("health while running: %+v", s.Health())
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
		schemas.HeaderEventTime: "2026-01-02T03:04:05.123Z",
		schemas.HeaderImages:    schemas.ImagesHeader(ev.Data.Inputs.Digests),
		jetstream.MsgIDHeader:   fmt.Sprintf("dev:u1:%d", changeSeq),
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
		"bomstream_transformer_render_seconds": 2,
		"bomstream_stage_messages_total":       2,
	} {
		if got := counter(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// Defect 1 at the stage: a workload whose new inputs render no BOM gets a
// not-serving tombstone, once; one that never served gets nothing.
func TestStopServingPublishesNotServingTombstone(t *testing.T) {
	b := openBus(t, stream.Config{})
	w, never := workload("was-serving"), workload("never")
	publish(t, b, event(t, w, "vllm:a"))
	stopSeq := publish(t, b, event(t, w, "nginx"))
	publish(t, b, event(t, never, "nginx"))
	reg := prometheus.NewRegistry()
	run(t, newService(t, b, newTestRenderer(), Config{}, reg))
	eventually(t, "all acked", func() bool { return settled(t, b, DefaultDurable) })
	// A further non-serving change publishes nothing more.
	publish(t, b, event(t, w, "nginx:2"))
	eventually(t, "all acked", func() bool { return settled(t, b, DefaultDurable) })

	got := messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))
	if len(got) != 2 {
		t.Fatalf("BOMS holds %d messages for the workload, want its BOM and one tombstone", len(got))
	}
	ts := got[1]
	for k, v := range map[string]string{
		schemas.HeaderTombstone:       "true",
		schemas.HeaderTombstoneReason: schemas.TombstoneNotServing,
		schemas.HeaderChangeSeq:       fmt.Sprint(stopSeq),
	} {
		if got := ts.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if n := len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(never))); n != 0 {
		t.Fatalf("a workload that never served got %d BOMS messages", n)
	}
}

// An event whose BOM an earlier consumer already published (the consumer
// was deleted and created again, beyond the duplicate window) is not
// published twice; neither is a redelivered one.
func TestRecreatedConsumerDoesNotRepublish(t *testing.T) {
	b := openBus(t, stream.Config{})
	r := newTestRenderer()
	for i := range 5 {
		publish(t, b, event(t, workload(fmt.Sprint("w", i)), "vllm:a"))
	}
	stop := run(t, newService(t, b, r, Config{}, nil))
	eventually(t, "all acked", func() bool { return settled(t, b, DefaultDurable) })
	stop()
	_, js := b.Raw()
	if err := js.DeleteConsumer(context.Background(), schemas.StreamChanges, DefaultDurable); err != nil {
		t.Fatal(err)
	}
	publish(t, b, event(t, workload("new"), "vllm:a"))
	run(t, newService(t, b, r, Config{}, nil))
	eventually(t, "all acked again", func() bool { return settled(t, b, DefaultDurable) })
	if n := len(messages(t, b, schemas.StreamBOMs, "")); n != 6 {
		t.Fatalf("BOMS holds %d messages, want 6 (one per change)", n)
	}
	if n := r.totalCalls(); n != 6 {
		t.Fatalf("%d renders, want 6: the re-created consumer rendered published changes again", n)
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
		schemas.HeaderTombstone:       "true",
		schemas.HeaderTombstoneReason: schemas.TombstoneDeleted,
		schemas.HeaderWorkload:        schemas.WorkloadHeader(w),
		schemas.HeaderChangeSeq:       fmt.Sprint(delSeq),
		schemas.HeaderEventTime:       "2026-01-03T00:00:00Z",
		jetstream.MsgIDHeader:         schemas.BOMMsgID(w, delSeq),
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

func dlqMessages(t *testing.T, b *stream.Bus) []deadletter.Letter {
	t.Helper()
	var out []deadletter.Letter
	if err := deadletter.New(b).List(context.Background(), DefaultStage, func(d deadletter.Letter) error {
		out = append(out, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func publishRaw(t *testing.T, b *stream.Bus, subject string, data []byte) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	if _, err := b.Writer().Publish(context.Background(), m, ""); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedEventGoesToDLQAndOthersFlow(t *testing.T) {
	b := openBus(t, stream.Config{})
	bad := schemas.ChangesSubject(workload("bad"))
	publishRaw(t, b, bad, []byte(`{"specversion": "1.0", "data": `))
	// Valid JSON without an identity is as useless as broken JSON.
	publishRaw(t, b, bad, []byte(`{"type":"dev.bomstream.workload.observed.v1"}`))
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
	if !strings.Contains(dl[0].Reason, "parse change event at seq 1") {
		t.Errorf("reason %q does not say what failed", dl[0].Reason)
	}
	if !strings.Contains(dl[1].Reason, "identity incomplete") {
		t.Errorf("reason %q does not say what failed", dl[1].Reason)
	}
	if dl[0].Subject != bad || dl[0].Seq != 1 || dl[0].Stream != schemas.StreamChanges || dl[0].Stage != DefaultStage {
		t.Errorf("dead letter origin %+v", dl[0])
	}
	if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))) != 1 {
		t.Error("the good event behind the bad ones produced no BOM")
	}
	if r.totalCalls() != 1 {
		t.Errorf("renderer called %d times, want once (for the good event)", r.totalCalls())
	}
}

// Rendering is deterministic: a render error is dead-lettered at once,
// while the other events flow.
func TestRenderErrorIsDeadLetteredWhileOthersFlow(t *testing.T) {
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
	run(t, newService(t, b, r, Config{}, nil))
	eventually(t, "all events are resolved", func() bool { return settled(t, b, DefaultDurable) })

	if n := r.callsOf(failing.ID); n != 1 {
		t.Errorf("failing event rendered %d times, want once", n)
	}
	for _, ev := range good {
		if n := r.callsOf(ev.ID); n != 1 {
			t.Errorf("good event %s rendered %d times", ev.ID, n)
		}
	}
	dl := dlqMessages(t, b)
	if len(dl) != 1 || !strings.Contains(dl[0].Reason, "model rule table broken") || !strings.Contains(dl[0].Reason, "render dev/ml/Deployment/w-f") {
		t.Fatalf("dead letters %+v", dl)
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
	if len(dl) != 1 || !strings.Contains(dl[0].Reason, "renderer panicked") {
		t.Fatalf("dead letters %+v", dl)
	}
	if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(after.Data.Workload))) != 1 {
		t.Error("no BOM for the event after the panic")
	}
}

// Two replicas on one consumer: the server pins it to one of them, so no
// workload's events are ever split between the two, and every event is
// rendered once; when the active one stops, the other takes over.
func TestTwoReplicasShareTheConsumer(t *testing.T) {
	b1 := openBus(t, stream.Config{Listen: "127.0.0.1:-1"})
	b2 := openBus(t, stream.Config{URL: b1.ClientURL()})
	r := newTestRenderer()
	const n = 40
	var ids []string
	for i := range n {
		ev := event(t, workload(fmt.Sprint("w", i%4)), fmt.Sprint("vllm:", i))
		publish(t, b1, ev)
		ids = append(ids, ev.ID)
	}
	stop1 := run(t, newService(t, b1, r, Config{}, prometheus.NewRegistry()))
	run(t, newService(t, b2, r, Config{}, prometheus.NewRegistry()))
	eventually(t, "all events are resolved", func() bool { return settled(t, b1, DefaultDurable) })
	for _, id := range ids {
		if c := r.callsOf(id); c != 1 {
			t.Errorf("event %s rendered %d times, want once", id, c)
		}
	}
	checkOrder(t, b1)
	stop1()
	more := event(t, workload("later"), "vllm:x")
	publish(t, b1, more)
	eventually(t, "the other replica took over", func() bool { return settled(t, b1, DefaultDurable) })
	if r.callsOf(more.ID) != 1 {
		t.Fatal("the event after the first replica stopped was not rendered once")
	}
}

// checkOrder fails when BOMS holds a workload's BOMs out of change order.
func checkOrder(t *testing.T, b *stream.Bus) {
	t.Helper()
	last := map[string]uint64{}
	for _, m := range messages(t, b, schemas.StreamBOMs, "") {
		seq, err := strconv.ParseUint(m.Header.Get(schemas.HeaderChangeSeq), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if seq <= last[m.Subject] {
			t.Errorf("%s: BOM of change %d stored after the BOM of change %d", m.Subject, seq, last[m.Subject])
		}
		last[m.Subject] = seq
	}
}

// One replica publishes each workload's BOMs in CHANGES order, whatever its
// concurrency.
func TestOneReplicaKeepsEachWorkloadsOrder(t *testing.T) {
	for _, conc := range []int{1, 64} {
		t.Run(fmt.Sprint("concurrency=", conc), func(t *testing.T) {
			b := openBus(t, stream.Config{})
			r := newTestRenderer()
			const workloads, versions = 8, 6
			for v := range versions {
				for i := range workloads {
					publish(t, b, event(t, workload(fmt.Sprint("w", i)), fmt.Sprintf("vllm:%d", v)))
				}
			}
			cfg := Config{}
			cfg.Concurrency = conc
			run(t, newService(t, b, r, cfg, prometheus.NewRegistry()))
			eventually(t, "all events are resolved", func() bool { return settled(t, b, DefaultDurable) })
			if got := r.totalCalls(); got != workloads*versions {
				t.Errorf("%d renders, want %d (one per event)", got, workloads*versions)
			}
			checkOrder(t, b)
			if n := len(messages(t, b, schemas.StreamBOMs, "")); n != workloads*versions {
				t.Errorf("BOMS holds %d messages, want %d", n, workloads*versions)
			}
		})
	}
}

// An event is acked only once the BOMS stream has stored its BOM: while the
// stream is missing, the event stays unacknowledged and is retried.
func TestEventIsAckedOnlyAfterTheBOMIsStored(t *testing.T) {
	b := openBus(t, stream.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := b.Raw()
	if err := js.DeleteStream(ctx, schemas.StreamBOMs); err != nil {
		t.Fatal(err)
	}
	r := newTestRenderer()
	w := workload("late-stream")
	ev := event(t, w, "vllm:1")
	publish(t, b, ev)
	reg := prometheus.NewRegistry()
	cfg := Config{}
	cfg.BaseBackoff, cfg.MaxBackoff, cfg.MaxAttempts = 10*time.Millisecond, 50*time.Millisecond, 1000
	s := newService(t, b, r, cfg, reg)
	run(t, s)
	eventually(t, "the event is retried", func() bool { return counter(t, reg, "bomstream_stage_retries_total") >= 2 })
	if settled(t, b, DefaultDurable) {
		t.Fatal("the event was acked although its BOM could not be stored")
	}
	if got := counter(t, reg, "bomstream_transformer_rendered_total"); got != 0 {
		t.Errorf("rendered_total = %v before any BOM was stored", got)
	}
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event is acked once BOMS exists", func() bool { return settled(t, b, DefaultDurable) })
	if got := len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))); got != 1 {
		t.Fatalf("BOMS holds %d messages for the workload, want 1", got)
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
	if s.Health().State != engine.StateStopped {
		t.Errorf("health after Run returned: %+v", s.Health())
	}
	if len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))) != 1 {
		t.Fatal("the event in flight at cancel produced no BOM")
	}
	if !settled(t, b, DefaultDurable) {
		t.Fatal("the event in flight at cancel was not acked")
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	cfg := Config{}
	cfg.Durable, cfg.AckWait, cfg.Concurrency = "a.b", -time.Second, -1
	err := cfg.Validate()
	for _, want := range []string{"transformer.service.durable", "transformer.service.ackWait", "transformer.service.concurrency"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error naming %s", err, want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// Outcome gives, without a consumer, the message the stage published for an
// event: the same subject, body and headers (message id included), so that
// a repair that publishes it again restores exactly what was lost.
func TestOutcomeIsWhatTheStagePublished(t *testing.T) {
	b := openBus(t, stream.Config{})
	r := newTestRenderer()
	s := newService(t, b, r, Config{}, nil)
	w, del := workload("u1"), workload("gone")
	bomSeq := publish(t, b, event(t, w, "vllm:a"))
	stopSeq := publish(t, b, event(t, w, "nginx"))
	publish(t, b, event(t, del, "vllm:b"))
	delSeq := publish(t, b, schemas.NewDeleted("test", time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), del))
	run(t, s)
	eventually(t, "all acked", func() bool { return settled(t, b, DefaultDurable) })

	stored := map[string]*jetstream.RawStreamMsg{}
	for _, m := range messages(t, b, schemas.StreamBOMs, "") {
		stored[m.Header.Get(schemas.HeaderChangeSeq)] = m
	}
	for _, c := range []struct {
		seq        uint64
		wasServing bool
	}{{bomSeq, false}, {stopSeq, true}, {delSeq, true}} {
		data := changeData(t, b, c.seq)
		out, err := s.Outcome(data, c.seq, c.wasServing)
		if err != nil || out == nil {
			t.Fatalf("Outcome(%d) = %v, %v", c.seq, out, err)
		}
		m := stored[fmt.Sprint(c.seq)]
		if m == nil || out.Subject != m.Subject || string(out.Data) != string(m.Data) {
			t.Fatalf("Outcome(%d) = %s %s, stage published %v", c.seq, out.Subject, out.Data, m)
		}
		for k := range m.Header {
			if strings.HasPrefix(k, "Nats-Expected-") {
				continue // the publish adds it
			}
			if out.Header.Get(k) != m.Header.Get(k) {
				t.Errorf("Outcome(%d) header %s = %q, stage published %q", c.seq, k, out.Header.Get(k), m.Header.Get(k))
			}
		}
	}
	if out, err := s.Outcome(changeData(t, b, stopSeq), stopSeq, false); out != nil || err != nil {
		t.Errorf("a non-serving event of a workload that was not serving: %v, %v; want nothing", out, err)
	}
	if _, err := s.Outcome([]byte("{"), 99, false); !engine.IsPermanent(err) {
		t.Errorf("unreadable event: %v, want a permanent error", err)
	}
}

// changeData is the body of the CHANGES message at seq.
func changeData(t *testing.T, b *stream.Bus, seq uint64) []byte {
	t.Helper()
	_, js := b.Raw()
	s, err := js.Stream(context.Background(), schemas.StreamChanges)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return m.Data
}

// follower records what it is asked to follow, failing its first fail calls.
type follower struct {
	mu   sync.Mutex
	fail int
	got  []schemas.BOMMessage
}

func (f *follower) Follow(_ context.Context, m *schemas.BOMMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("follower not ready")
	}
	f.got = append(f.got, *m)
	return nil
}

func (f *follower) followed() []schemas.BOMMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// A follower sees every message the stage stores, BOM and tombstone, in
// order; its failure retries the event without storing the BOM twice, and
// the event is acked only once it has followed.
func TestFollowerSeesEveryStoredMessageOnce(t *testing.T) {
	b := openBus(t, stream.Config{})
	w := workload("followed")
	bomSeq := publish(t, b, event(t, w, "vllm:a"))
	delSeq := publish(t, b, schemas.NewDeleted("test", time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), w))
	cfg := Config{}
	cfg.BaseBackoff, cfg.MaxBackoff, cfg.MaxAttempts = 10*time.Millisecond, 50*time.Millisecond, 1000
	s := newService(t, b, newTestRenderer(), cfg, nil)
	f := &follower{fail: 2}
	s.Follow(f)
	run(t, s)
	eventually(t, "both events are acked", func() bool { return settled(t, b, DefaultDurable) })

	stored := messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))
	if len(stored) != 2 {
		t.Fatalf("BOMS holds %d messages, want a BOM and a tombstone", len(stored))
	}
	got := f.followed()
	if len(got) != 2 || got[0].ChangeSeq != bomSeq || got[0].IsTombstone() || got[1].ChangeSeq != delSeq || !got[1].IsTombstone() {
		t.Fatalf("followed %+v, want the BOM at %d then the tombstone at %d", got, bomSeq, delSeq)
	}
	if string(got[0].BOM) != string(stored[0].Data) || got[0].Workload != w {
		t.Errorf("the follower saw another BOM than the one stored")
	}
}

// A process that stored a BOM and stopped before its follower acted: the
// next holder of the event does not store it again, and its follower acts
// on the stored message.
func TestFollowerActsOnAMessageStoredBeforeACrash(t *testing.T) {
	b := openBus(t, stream.Config{})
	w := workload("crashed")
	seq := publish(t, b, event(t, w, "vllm:a"))
	cfg := Config{}
	cfg.BaseBackoff, cfg.MaxBackoff, cfg.MaxAttempts = time.Hour, time.Hour, 1000
	first := newService(t, b, newTestRenderer(), cfg, nil)
	first.Follow(&follower{fail: 1 << 30})
	stop := run(t, first)
	eventually(t, "the first process stored the BOM", func() bool {
		return len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))) == 1
	})
	stop()
	if settled(t, b, DefaultDurable) {
		t.Fatal("the event was acked although its follower failed")
	}

	cfg.BaseBackoff, cfg.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	r := newTestRenderer()
	second := newService(t, b, r, cfg, nil)
	f := &follower{}
	second.Follow(f)
	run(t, second)
	eventually(t, "the event is acked", func() bool { return settled(t, b, DefaultDurable) })
	stored := messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))
	if len(stored) != 1 {
		t.Fatalf("BOMS holds %d messages, want 1", len(stored))
	}
	got := f.followed()
	if len(got) != 1 || got[0].ChangeSeq != seq || string(got[0].BOM) != string(stored[0].Data) || got[0].Workload != w {
		t.Fatalf("followed %+v, want the stored BOM at %d", got, seq)
	}
	if r.totalCalls() != 0 {
		t.Errorf("the second process rendered %d times an event whose BOM was stored", r.totalCalls())
	}
}
