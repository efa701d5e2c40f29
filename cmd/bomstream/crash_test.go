package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/sinks/sinktest"
	"github.com/bomstream/bomstream/stream/ledger"
)

const syntheticDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w-%04d
  namespace: crash
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.%d.%d
        command: ["vllm", "serve"]
        args: ["org-%d/model-%d", "--tensor-parallel-size=1"]
`

// writeSynthetic writes n distinct vLLM Deployments, 100 per file.
func writeSynthetic(t testing.TB, dir string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, syntheticDeployment, i, i/100, i%100, i, i)
		if i%100 == 99 || i == n-1 {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("batch-%02d.yaml", i/100)), b.String())
			b.Reset()
		}
	}
}

// gated holds back every Export once `after` exports have succeeded, until
// release is closed, and says so by closing paused.
type gated struct {
	sinks.Sink
	after   int
	mu      sync.Mutex
	done    int
	paused  chan struct{}
	once    sync.Once
	release chan struct{}
}

func (g *gated) Export(ctx context.Context, b sinks.BOM) error {
	g.mu.Lock()
	hold := g.after > 0 && g.done >= g.after
	g.mu.Unlock()
	if hold {
		g.once.Do(func() { close(g.paused) })
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := g.Sink.Export(ctx, b)
	if err == nil {
		g.mu.Lock()
		g.done++
		g.mu.Unlock()
	}
	return err
}

// countingFile is a registry whose "file" type is the real file sink wrapped
// by a sinktest.Counter (and, when gate is set, held back by it).
func countingFile(gate *gated) (sinks.Registry, func() *sinktest.Counter) {
	var (
		mu sync.Mutex
		c  *sinktest.Counter
	)
	reg := sinks.Registry{file.Type: sinks.Type{
		NewConfig: file.SinkType.NewConfig,
		New: func(ctx context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			s, err := file.SinkType.New(ctx, cfg, deps)
			if err != nil {
				return nil, err
			}
			if gate != nil {
				gate.Sink = s
				s = gate
			}
			mu.Lock()
			defer mu.Unlock()
			c = sinktest.NewCounter(s)
			return c, nil
		},
	}}
	return reg, func() *sinktest.Counter {
		mu.Lock()
		defer mu.Unlock()
		return c
	}
}

// TestCrashMidExport kills the embedded server while the file sink is half
// way through 1,000 BOMs, then runs `run --once` on the same data directory:
// every BOM ends up exported, exactly once in the sink.
func TestCrashMidExport(t *testing.T) {
	const n = 1000
	tree, dataDir := t.TempDir(), filepath.Join(t.TempDir(), "data")
	sinkDir := filepath.Join(t.TempDir(), "boms")
	writeSynthetic(t, tree, n)
	want := serving(expect(t, tree, "default"))
	if len(want) != n {
		t.Fatalf("%d of the %d synthetic workloads render a BOM", len(want), n)
	}

	// First process: the pipeline in-process, crashed after 200 exports.
	gate := &gated{after: 200, paused: make(chan struct{}), release: make(chan struct{})}
	reg1, counter1 := countingFile(gate)
	cfg := process.DefaultConfig()
	cfg.Stream.DataDir = dataDir
	cfg.Manifests.Dir = tree
	// A short ack wait: the messages in hand at the crash are redelivered to
	// the second process after it, instead of after the default 30s. Messages
	// held at the gate stay in progress: the runner renews their deadline
	// every third of it.
	cfg.Transformer.Service.AckWait = 4 * time.Second
	rc := runner.Config{}
	rc.AckWait = 4 * time.Second
	cfg.Sinks = []process.SinkConfig{{Name: "file", Type: "file", Runner: rc, Config: map[string]any{"dir": sinkDir}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitFor)
	defer cancel()
	p, err := process.New(ctx, cfg, process.Parts{Source: true, Transformer: true, Sinks: []string{"*"}}, process.Env{Sinks: reg1}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	runDone, syncDone := make(chan error, 1), make(chan error, 1)
	go func() { runDone <- p.Run(runCtx) }()
	go func() { _, _, err := p.Watcher().Once(runCtx); syncDone <- err }()
	select {
	case <-gate.paused:
	case err := <-runDone:
		t.Fatalf("pipeline ended before the crash: %v", err)
	case <-time.After(waitFor):
		t.Fatalf("the file sink did not reach 200 exports within %s", waitFor)
	}
	if got := countBOMFiles(t, sinkDir); got < 200 || got >= n {
		t.Fatalf("at the crash the sink holds %d BOMs, want some but not all", got)
	}
	p.Bus().Abort()
	// The exports held at the gate now reach the file sink, after the crash:
	// their ledger puts fail, as when a process dies between the two.
	close(gate.release)
	stop()
	for name, ch := range map[string]chan error{"pipeline": runDone, "manifest sync": syncDone} {
		select {
		case <-ch: // errors are expected: the server is gone
		case <-time.After(waitFor):
			t.Fatalf("%s did not stop within %s of the crash", name, waitFor)
		}
	}
	p.Close()
	first := counter1().Exports()

	// What the ledger recorded before the crash.
	recorded := map[string]bool{}
	func() {
		bus := openBus(t, dataDir, "")
		defer bus.Close()
		l, err := ledger.Open(ctx, bus, "file")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.All(ctx, func(_ string, value []byte, _ uint64) {
			var e struct {
				BomHash string `json:"bomHash"`
			}
			if json.Unmarshal(value, &e) == nil && e.BomHash != "" {
				recorded[e.BomHash] = true
			}
		}); err != nil {
			t.Fatal(err)
		}
	}()

	// Second process: the CLI, on the same data directory.
	reg2, counter2 := countingFile(nil)
	c := newCLI(t)
	c.reg = reg2
	conf := filepath.Join(t.TempDir(), "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`transformer:
  service: {ackWait: 4s}
sinks:
- name: file
  type: file
  runner: {ackWait: 4s}
  config: {dir: %q}
`, sinkDir))
	r := c.mustRun("run", "--config", conf, "--manifests", tree, "--once", "--data-dir", dataDir)
	mustContain(t, "summary", r.stdout, fmt.Sprintf("%d workloads read, %d serving", n, n))
	second := counter2().Exports()

	// The sink: exactly one immutable file per workload, the right one.
	files := bomFiles(t, sinkDir)
	if len(files) != n || countBOMFiles(t, sinkDir) != n {
		t.Fatalf("sink holds %d BOM files in %d workload directories, want %d in %d", countBOMFiles(t, sinkDir), len(files), n, n)
	}
	for k, e := range want {
		got := files[workloadDir(e.Workload)]
		if len(got) != 1 || filepath.Join(workloadDir(e.Workload), got[0]) != bomFilePath(e.Workload, e.BomHash) {
			t.Errorf("%s: BOM files %v, want exactly %s", k, got, filepath.Base(bomFilePath(e.Workload, e.BomHash)))
		}
	}

	// Export calls per bomHash, across the two processes. Every BOM was
	// exported successfully at least once. A BOM exported by both processes is
	// one whose Export finished but whose ledger put did not before the crash
	// (the ones held at the gate, and any caught between the two steps): the
	// ledger never had it, so the second process exported it again, and the
	// idempotent file sink kept one file. For every BOM the ledger did
	// record, the second process made no export at all.
	twice := 0
	for _, e := range want {
		h := e.BomHash
		total := first[h] + second[h]
		switch {
		case total == 0:
			t.Errorf("%s: never exported", wkey(e.Workload))
		case recorded[h] && second[h] > 0:
			t.Errorf("%s: recorded in the ledger before the crash, yet exported again", wkey(e.Workload))
		case first[h] > 1 || second[h] > 1:
			t.Errorf("%s: exported %d times by one process", wkey(e.Workload), total)
		case total == 2:
			twice++
		}
	}
	for h := range recorded {
		if first[h] == 0 {
			t.Errorf("ledger records %s, which the first process never exported", h)
		}
	}
	if len(first) == 0 || len(first) >= n {
		t.Errorf("the first process exported %d BOMs: the crash did not hit mid-way", len(first))
	}
	if twice > len(first)-len(recorded) {
		t.Errorf("%d BOMs exported twice, but only %d were exported and not recorded before the crash", twice, len(first)-len(recorded))
	}
	t.Logf("before the crash: %d exported, %d in the ledger; after: %d exported; %d exported by both", len(first), len(recorded), len(second), twice)
}
