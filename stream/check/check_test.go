package check

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/transformer"
	"github.com/bomstream/bomstream/transformer/service"
)

// renderer is the transformer's narrowest seam, as in its own tests: the
// first image picks the result ("nginx": no BOM, "fail": an error).
type renderer struct{}

func (renderer) Render(ev schemas.WorkloadChange) (transformer.Result, error) {
	image := ev.Data.Inputs.Components[0].Containers[0].Image
	switch {
	case strings.HasPrefix(image, "nginx"):
		return transformer.Result{Workload: ev.Data.Workload, Skipped: "no runtime and no model"}, nil
	case image == "fail":
		return transformer.Result{}, errors.New("model rule table broken")
	}
	bom, err := schemas.CanonicalJSON(map[string]string{"bomFormat": "CycloneDX", "workload": ev.Data.Workload.UID, "image": image})
	if err != nil {
		return transformer.Result{}, err
	}
	return transformer.Result{Workload: ev.Data.Workload, BOM: bom, BomHash: schemas.BomHash(bom)}, nil
}

func workload(uid string) schemas.Workload {
	return schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "w-" + uid, UID: uid}
}

// fixture is a store with the real transformer stage (and, when asked,
// the real file sink) run over some changes.
type fixture struct {
	t   *testing.T
	ctx context.Context
	bus *stream.Bus
	svc *service.Service
	c   *Checker
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	bus, err := stream.Open(ctx, stream.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	svc, err := service.New(bus, renderer{}, service.Config{}, zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(bus, Config{Transformer: svc, Ledgers: runnerLedgers{bus}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, bus: bus, svc: svc, c: c}
}

// change appends an observation of w running image and returns its sequence.
func (f *fixture) change(w schemas.Workload, image string) uint64 {
	f.t.Helper()
	ev, err := schemas.NewObserved("test", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{{Name: "main", Locator: "spec.template",
			Containers: []schemas.Container{{Name: "c", Locator: "spec.template.spec.containers[0]", Image: image}}}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	seq, _, err := changelog.New(f.bus).PublishChange(f.ctx, ev)
	if err != nil {
		f.t.Fatal(err)
	}
	return seq
}

// drain runs fn until durable has settled everything on streamName.
func (f *fixture) drain(run func(context.Context) error, streamName, durable string) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	bustest.Eventually(f.t, durable+" to drain", time.Minute, func() bool {
		ok, err := f.bus.Durables().CaughtUp(f.ctx, streamName, durable)
		if err != nil {
			f.t.Fatal(err)
		}
		return ok
	})
	cancel()
	if err := <-done; err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) transform() { f.drain(f.svc.Run, schemas.StreamChanges, "transformer") }

// outcomeOf is the BOMS message holding the outcome of change seq; nil if none.
func (f *fixture) outcomeOf(seq uint64) *jetstream.RawStreamMsg {
	f.t.Helper()
	var found *jetstream.RawStreamMsg
	err := f.bus.Reader().Messages(f.ctx, schemas.StreamBOMs, "", 0, func(m *jetstream.RawStreamMsg) error {
		if m.Header.Get(schemas.HeaderChangeSeq) == strconv.FormatUint(seq, 10) && found == nil {
			found = m
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return found
}

// lose deletes a message, as a damaged block loses it.
func (f *fixture) lose(streamName string, seq uint64) {
	f.t.Helper()
	_, js := f.bus.Raw()
	s, err := js.Stream(f.ctx, streamName)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.DeleteMsg(f.ctx, seq); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) check() *Report {
	f.t.Helper()
	r, err := f.c.Check(f.ctx, Full)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) repair(r *Report) {
	f.t.Helper()
	if _, err := f.c.Repair(f.ctx, r); err != nil {
		f.t.Fatal(err)
	}
}

func printed(r *Report) string {
	var b strings.Builder
	r.Print(&b)
	return b.String()
}

// A lost not-serving tombstone and a lost older version: both come back,
// and the workload's subject ends with its current state again. A change
// the transformer dead-lettered is a note, not a loss.
func TestLostOutcomesAreRenderedAgain(t *testing.T) {
	f := newFixture(t)
	stopped, older := workload("stopped"), workload("older")
	f.change(stopped, "vllm:1")
	stopSeq := f.change(stopped, "nginx")
	v1 := f.change(older, "vllm:1")
	v2 := f.change(older, "vllm:2")
	f.change(workload("bad"), "fail")
	f.transform()
	if r := f.check(); r.Problems() != 0 {
		t.Fatalf("a healthy store has problems:\n%s", printed(r))
	}
	tomb, first := f.outcomeOf(stopSeq), f.outcomeOf(v1)
	if tomb == nil || tomb.Header.Get(schemas.HeaderTombstoneReason) != schemas.TombstoneNotServing || first == nil {
		t.Fatalf("the stage did not publish the tombstone and the first version")
	}
	f.lose(schemas.StreamBOMs, tomb.Sequence)
	f.lose(schemas.StreamBOMs, first.Sequence)

	r := f.check()
	out := printed(r)
	if r.Problems() != 1 || r.Repairable() != 1 {
		t.Fatalf("want one repairable problem:\n%s", out)
	}
	for _, s := range []string{"BOMS lacks the outcome (BOM or tombstone) of 2 handled changes (1 of them older", "dev/ml/Deployment/w-older, dev/ml/Deployment/w-stopped",
		"the store lost 2 messages", "1 changes have no outcome because the transformer dead-lettered them: change 5: render dev/ml/Deployment/w-bad"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	f.repair(r)
	if r := f.check(); r.Problems() != 0 {
		t.Fatalf("after the repair:\n%s", printed(r))
	}
	again := f.outcomeOf(stopSeq)
	if again == nil || string(again.Data) != string(tomb.Data) || again.Header.Get(schemas.HeaderTombstoneReason) != schemas.TombstoneNotServing {
		t.Errorf("the tombstone came back as %v", again)
	}
	if m := f.outcomeOf(v1); m == nil || string(m.Data) != string(first.Data) {
		t.Errorf("the first version came back as %v", m)
	}
	last, err := f.bus.Reader().LastMsg(f.ctx, schemas.StreamBOMs, schemas.BOMsSubject(older))
	if err != nil || last.Header.Get(schemas.HeaderChangeSeq) != fmt.Sprint(v2) {
		t.Errorf("the subject of %s ends with %v, want its current version (change %d)", older, last, v2)
	}
}

// What CHANGES lost is named with its workload and stays a problem.
func TestLostChangesAreReported(t *testing.T) {
	f := newFixture(t)
	w := workload("w")
	first := f.change(w, "vllm:1")
	second := f.change(w, "vllm:2")
	f.change(w, "vllm:3")
	f.transform()
	f.lose(schemas.StreamChanges, second)
	r := f.check()
	out := printed(r)
	if r.Problems() != 1 || r.Repairable() != 0 || !strings.Contains(out, "the store lost 1 change events (sequences 2), which nothing can rebuild; 1 of them") ||
		!strings.Contains(out, "dev/ml/Deployment/w-w") {
		t.Fatalf("want one problem naming the workload, not repairable:\n%s", out)
	}
	// The head of CHANGES lost (a whole first block) is a hole too.
	f.lose(schemas.StreamChanges, first)
	out = printed(f.check())
	if !strings.Contains(out, "the store lost 2 change events (sequences 1-2)") {
		t.Fatalf("want the head of CHANGES reported lost:\n%s", out)
	}
}

// Consumers past the end of their stream are moved back; a sink whose
// ledger lost an entry is reset to the message it must see again, and
// applies it.
func TestConsumersAndLedgers(t *testing.T) {
	f := newFixture(t)
	var ws []schemas.Workload
	for i := range 5 {
		ws = append(ws, workload(fmt.Sprint("u", i)))
		f.change(ws[i], "vllm:1")
	}
	f.transform()
	dir := t.TempDir()
	s, err := file.SinkType.New(f.ctx, &file.Config{Name: "file", Dir: dir}, sinks.Deps{Name: "file", Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	newRunner := func() *runner.Runner {
		r, err := runner.New(f.bus, s, runner.Config{}, false, zaptest.NewLogger(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f.drain(newRunner().Run, schemas.StreamBOMs, "sink-file")
	if r := f.check(); r.Problems() != 0 {
		t.Fatalf("a healthy store has problems:\n%s", printed(r))
	}

	// The sink's ledger forgets a workload; the transformer and the sink
	// are moved past the ends of their streams.
	_, js := f.bus.Raw()
	kv, err := js.KeyValue(f.ctx, "bomstream-ledger-file")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(f.ctx, "w.dev.u3"); err != nil {
		t.Fatal(err)
	}
	if err := f.bus.Durables().Reset(f.ctx, schemas.StreamChanges, "transformer", 50); err != nil {
		t.Fatal(err)
	}
	r := f.check()
	out := printed(r)
	if r.Problems() != 2 || r.Repairable() != 2 {
		t.Fatalf("want two repairable problems:\n%s", out)
	}
	for _, s := range []string{"consumer transformer: delivered up to 49, past the last sequence of CHANGES (5)",
		"sink file: its consumer went past the latest outcome of 1 workloads", "dev/ml/Deployment/w-u3"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	f.repair(r)
	f.drain(newRunner().Run, schemas.StreamBOMs, "sink-file")
	if r := f.check(); r.Problems() != 0 {
		t.Fatalf("after the repair:\n%s", printed(r))
	}
	if _, err := kv.Get(f.ctx, "w.dev.u3"); err != nil {
		t.Errorf("the sink did not apply the workload again: %v", err)
	}
	// The transformer, created again, renders a new change once.
	f.change(ws[0], "vllm:2")
	f.transform()
	if r := f.check(); r.Problems() != 0 || r.BOMs.Msgs != 6 {
		t.Fatalf("after a new change, BOMS holds %d messages, want 6:\n%s", r.BOMs.Msgs, printed(r))
	}
}

// runnerLedgers reads the ledgers the sink runner keeps, as bomstream does.
type runnerLedgers struct{ bus *stream.Bus }

func (l runnerLedgers) ReadLedger(ctx context.Context, sink string) ([]Applied, []string, error) {
	entries, bad, err := runner.ReadLedger(ctx, l.bus, sink)
	out := make([]Applied, len(entries))
	for i, a := range entries {
		out[i] = Applied{Cluster: a.Cluster, UID: a.UID, ChangeSeq: a.ChangeSeq, Workload: a.Workload}
	}
	return out, bad, err
}
