package process

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// The pipeline's stages form one table by name, in the order they start;
// /readyz labels them as before, every consuming stage takes its dead
// letters back, and a dead letter of a stage that does not run here is
// refused with the reason.
func TestStageTable(t *testing.T) {
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.Stream.DataDir = filepath.Join(dir, "data")
	cfg.Sinks = []SinkConfig{
		{Name: "a", Type: "file", Config: map[string]any{"dir": filepath.Join(dir, "a")}},
		{Name: "b", Type: "file", Config: map[string]any{"dir": filepath.Join(dir, "b")}},
	}
	p, err := New(context.Background(), cfg, Parts{Transformer: true, Sinks: []string{"a"}, Findings: true}, Env{Sinks: registry.Builtin()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var names, labels []string
	for _, s := range p.stages() {
		names, labels = append(names, s.Name()), append(labels, label(s))
		if _, ok := s.(Redriver); !ok {
			t.Errorf("stage %s takes no dead letters back", s.Name())
		}
		if got := p.stage(s.Name()); got == nil || got.Name() != s.Name() {
			t.Errorf("the table finds %v by the name %s", got, s.Name())
		}
	}
	if want := []string{schemas.StageTransformer, schemas.SinkStage("a"), schemas.StageFindings}; !slices.Equal(names, want) {
		t.Errorf("stages %v, want %v", names, want)
	}
	if want := []string{"transformer", "sink a", "findings"}; !slices.Equal(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if !p.findingsInline {
		t.Error("the findings stage does not follow this process's transformer")
	}
	for stage, want := range map[string]string{
		schemas.SinkStage("b"): "sink b does not run in this process (it runs: a)",
		"bogus":                `no stage "bogus" here`,
	} {
		_, err := retryOne(context.Background(), p, deadletter.Letter{Stage: stage})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("retry a dead letter of %s: %v, want %q", stage, err, want)
		}
	}
}
