package process

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream/engine"
)

// A sink's runner takes its type's concurrency unless its configuration
// names one: the file sink groups its flushes, so it runs more exports at
// once than the engine's default.
func TestSinkTypeConcurrencyDefault(t *testing.T) {
	if file.SinkType.Concurrency <= engine.DefaultConcurrency {
		t.Fatalf("file sink concurrency %d, want more than the engine's %d", file.SinkType.Concurrency, engine.DefaultConcurrency)
	}
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.Stream.DataDir = filepath.Join(dir, "data")
	set := runner.Config{}
	set.Concurrency = 8
	cfg.Sinks = []SinkConfig{
		{Name: "default", Type: "file", Config: map[string]any{"dir": filepath.Join(dir, "a")}},
		{Name: "set", Type: "file", Runner: set, Config: map[string]any{"dir": filepath.Join(dir, "b")}},
		{Name: "out", Type: "stdout"},
	}
	p, err := newPipeline(context.Background(), cfg, Parts{Transformer: true, Sinks: []string{"*"}}, Env{Sinks: registry.Builtin()}, zap.NewNop(), newObserver())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := map[string]int{}
	for _, s := range p.sinks {
		got[s.cfg.Name] = s.cfg.Runner.Concurrency
	}
	want := map[string]int{"default": file.SinkType.Concurrency, "set": 8, "out": 0}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("sink %s: runner concurrency %d, want %d", name, got[name], w)
		}
	}
}
