package file

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

func TestFsyncOptionDecodes(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]any
		want bool
	}{
		{map[string]any{}, true},
		{map[string]any{"fsync": true}, true},
		{map[string]any{"fsync": false}, false},
	} {
		c.raw["dir"] = t.TempDir()
		s, err := fromConfig(c.raw)
		if err != nil {
			t.Fatalf("%v: %v", c.raw, err)
		}
		if got := s.(*Sink).fsync; got != c.want {
			t.Errorf("%v: fsync %v, want %v", c.raw, got, c.want)
		}
	}
	if _, err := fromConfig(map[string]any{"fsync": "never"}); err == nil || !strings.Contains(err.Error(), "never") {
		t.Errorf("fsync: \"never\": error %v, want one naming the value", err)
	}
}

// fromConfig builds a sink as the registry does from a config block.
func fromConfig(raw map[string]any) (sinks.Sink, error) {
	reg := sinks.Registry{Type: SinkType}
	cfg, err := reg.Decode(Type, raw)
	if err != nil {
		return nil, err
	}
	return reg.New(context.Background(), Type, "f", cfg, sinks.Deps{})
}

func newNoFsyncSink(t *testing.T) *Sink {
	t.Helper()
	off := false
	s, err := New(Config{Dir: t.TempDir(), Fsync: &off}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Without fsync the sink keeps the whole contract; only crash durability differs.
func TestConformanceWithoutFsync(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinks.Sink { return newNoFsyncSink(t) }, sinktest.Options{Inspect: inspect})
}

// truncate cuts the immutable file of b in s's tree to half its size, as a
// machine crash can leave an unsynced write, and returns its path.
func truncate(t *testing.T, s *Sink, b sinks.BOM) string {
	t.Helper()
	dir, err := s.WorkloadDir(b.Workload)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.TrimPrefix(b.BomHash, "sha256:")+Suffix)
	if err := os.Truncate(path, int64(len(b.Body)/2)); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTruncatedFileIsRewritten(t *testing.T) {
	for name, s := range map[string]*Sink{"durable": newSink(t), "nofsync": newNoFsyncSink(t)} {
		ctx := context.Background()
		b := sinktest.NewBOM(sinktest.Workload("crashed"), 1)
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
		path := truncate(t, s, b)
		if err := s.Export(ctx, b); err != nil {
			t.Fatalf("%s: re-export over a truncated file: %v", name, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(b.Body) {
			t.Fatalf("%s: file holds %d bytes after the re-export, want the %d bytes of the BOM", name, len(got), len(b.Body))
		}
	}
}
