package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/registry"
)

// panicky is a file sink that panics on one workload while armed.
type panicky struct {
	sinks.Sink
	refuse string
	armed  *atomic.Bool
}

func (p *panicky) Export(ctx context.Context, b sinks.BOM) error {
	if p.armed.Load() && b.Workload.Name == p.refuse {
		panic(fmt.Sprintf("panicky store: nil map in the export of %s", b.Workload.Name))
	}
	return p.Sink.Export(ctx, b)
}

type panickyConfig struct {
	file.Config `yaml:",inline"`
	Refuse      string `yaml:"refuse"`
}

// Defect: `dlq retry` ran a sink's export outside the engine, in a goroutine
// of the process that owns the store with no recover, so a sink that
// panicked on a retried dead letter killed `bomstream run`. Now a retry is
// a redrive through the engine: the panic is recovered, the message is a
// dead letter again with the panic as its reason, and the owner stays up;
// once the sink is mended the retry goes through and the entry leaves.
func TestDeadLetterRetryPanicKeepsOwnerUp(t *testing.T) {
	tree, dir := t.TempDir(), t.TempDir()
	copyManifests(t, examplesDir, tree)
	want := serving(expect(t, tree, "default"))
	data, sinkDir := filepath.Join(dir, "data"), filepath.Join(dir, "boms")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: pan, type: panicky, config: {dir: %q, refuse: chat}}
`, sinkDir))
	var armed atomic.Bool
	armed.Store(true)
	c := newCLI(t)
	c.reg = registry.Builtin()
	c.reg["panicky"] = sinks.Type{
		NewConfig: func() sinks.Config { return &panickyConfig{} },
		New: func(ctx context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			pc := cfg.(*panickyConfig)
			s, err := file.SinkType.New(ctx, &pc.Config, deps)
			if err != nil {
				return nil, err
			}
			return &panicky{Sink: s, refuse: pc.Refuse, armed: &armed}, nil
		},
	}

	c.httpAddr = make(chan string, 1)
	stop := startRun(t, c, "--config", conf, "--manifests", tree, "--interval", "200ms", "--data-dir", data, "--http-listen", "127.0.0.1:0")
	base := "http://" + <-c.httpAddr
	eventually(t, "the panic dead-lettered", func() bool {
		r := c.run("dlq", "list", "--data-dir", data, "--config", conf)
		return r.err == nil && strings.Contains(r.stdout, "1 dead letters")
	})

	// The retry panics again: the owner answers, stays up, and the message
	// is back on the dead-letter stream with the panic as its reason.
	r := c.run("dlq", "retry", "--sink", "pan", "--data-dir", data, "--config", conf)
	if r.err == nil || !strings.Contains(r.stdout, "still failing") || !strings.Contains(r.stdout, "panicked") {
		t.Fatalf("retry of a panicking export: err %v\n%s", r.err, r.stdout)
	}
	if code, _ := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("the owner after a panicking retry: /readyz %d", code)
	}
	list := c.mustRun("dlq", "list", "--data-dir", data, "--config", conf)
	mustContain(t, "dlq list after the panicking retry", list.stdout, "sink.pan", "ml/Deployment/chat", "panicked", "nil map in the export of chat", "1 dead letters")

	// Mended: the retry goes through and the entry leaves.
	armed.Store(false)
	r = c.run("dlq", "retry", "--sink", "pan", "--data-dir", data, "--config", conf)
	if r.err != nil {
		t.Fatalf("retry once mended: %v\n%s", r.err, r.stdout)
	}
	mustContain(t, "dlq retry", r.stdout, "1 retried and removed, 0 still failing")
	mustContain(t, "dlq list after the retry", c.mustRun("dlq", "list", "--data-dir", data, "--config", conf).stdout, "0 dead letters")
	checkSink(t, sinkDir, want, nil)
	if r := stop(); r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, tail(r.stderr, 3000))
	}
}

// down is a sink whose store is down: every export fails, transiently.
type down struct {
	sinks.Sink
	calls *atomic.Int64
}

func (d *down) Export(ctx context.Context, b sinks.BOM) error {
	d.calls.Add(1)
	return fmt.Errorf("export %s: store unreachable", b.Workload.Name)
}

// A `run --once` whose sink stays down keeps retrying (a transient failure
// is never dropped); interrupted, it fails saying how many BOMs it leaves
// unexported, and a later run exports them.
func TestOnceInterruptedSaysWhatIsLeft(t *testing.T) {
	tree, dir := t.TempDir(), t.TempDir()
	copyManifests(t, examplesDir, tree)
	want := serving(expect(t, tree, "default"))
	data, conf := filepath.Join(dir, "data"), filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf("sinks:\n- {name: out, type: down, config: {dir: %q}}\n", filepath.Join(dir, "boms")))
	var calls atomic.Int64
	c := newCLI(t)
	c.reg = registry.Builtin()
	c.reg["down"] = sinks.Type{
		NewConfig: func() sinks.Config { return &file.Config{} },
		New: func(ctx context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			s, err := file.SinkType.New(ctx, cfg, deps)
			return &down{Sink: s, calls: &calls}, err
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		eventually(t, "exports to fail", func() bool { return calls.Load() >= int64(2*len(want)) })
		cancel()
	}()
	r := c.runCtx(ctx, "run", "--config", conf, "--manifests", tree, "--once", "--data-dir", data)
	left := fmt.Sprintf("wait for sink-out to drain (%d messages of BOMS not settled yet, still retried", len(want))
	if r.err == nil || !strings.Contains(r.err.Error(), left) {
		t.Fatalf("interrupted run --once: %v, want %q", r.err, left)
	}
	c.reg["down"] = file.SinkType // the store is back
	r = c.mustRun("run", "--config", conf, "--manifests", tree, "--once", "--data-dir", data)
	mustContain(t, "the next run", r.stdout, fmt.Sprintf("sink out: %d exported", len(want)))
}
