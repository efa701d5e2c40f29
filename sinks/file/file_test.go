package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

func newSink(t *testing.T) *Sink {
	t.Helper()
	s, err := New(Config{Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// inspect reads the tree the way a person would: BOM files, the latest
// pointer (checked against the latest copy's bytes) and the tombstone marker.
func inspect(t *testing.T, ss sinks.Sink, w schemas.Workload) sinktest.Stored {
	t.Helper()
	s := ss.(*Sink)
	dir, err := s.WorkloadDir(w)
	if err != nil {
		t.Fatal(err)
	}
	var st sinktest.Stored
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return st
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, ".tmp-"):
			t.Errorf("temporary file left behind: %s", n)
		case n == LatestFile || n == PointerFile:
		case n == DeletedFile:
			st.Tombstoned = true
		case strings.HasSuffix(n, Suffix):
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(n, Suffix); schemas.BomHash(b) != "sha256:"+want {
				t.Errorf("%s holds bytes hashing to %s", n, schemas.BomHash(b))
			}
			st.BOMs++
		default:
			t.Errorf("unexpected file %s", n)
		}
	}
	var p pointer
	if b, err := os.ReadFile(filepath.Join(dir, PointerFile)); err == nil {
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		latest, err := os.ReadFile(filepath.Join(dir, LatestFile))
		if err != nil {
			t.Fatal(err)
		}
		if got := schemas.BomHash(latest); got != p.BomHash {
			t.Errorf("%s hashes to %s but %s says %s", LatestFile, got, PointerFile, p.BomHash)
		}
		st.Latest = p.BomHash
	}
	return st
}

func TestConformance(t *testing.T) {
	bad := func(mut func(*schemas.Workload)) sinks.BOM {
		w := sinktest.Workload("x")
		mut(&w)
		b := sinktest.NewBOM(w, 1)
		return b
	}
	mismatched := sinktest.NewBOM(sinktest.Workload("mismatch"), 1)
	mismatched.Body = append([]byte(nil), mismatched.Body...)
	mismatched.Body[len(mismatched.Body)-1] = ' '
	traversal := bad(func(w *schemas.Workload) { w.Name = ".." })
	sinktest.Run(t, func(t *testing.T) sinks.Sink { return newSink(t) }, sinktest.Options{
		Inspect: inspect,
		Invalid: []sinks.BOM{
			traversal,
			bad(func(w *schemas.Workload) { w.Namespace = "../../etc" }),
			bad(func(w *schemas.Workload) { w.Cluster = "." }),
			bad(func(w *schemas.Workload) { w.Kind = `a\b` }),
			mismatched,
		},
		InvalidTombstones: []sinks.Tombstone{sinktest.NewTombstone(traversal.Workload, 2)},
	})
}

func TestLayoutIsReadable(t *testing.T) {
	s := newSink(t)
	w := sinktest.Workload("llama")
	b := sinktest.NewBOM(w, 7)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Dir(), "dev", "ml", "Deployment", "llama")
	for _, name := range []string{strings.TrimPrefix(b.BomHash, "sha256:") + ".cdx.json", "latest.cdx.json"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.Body) {
			t.Errorf("%s differs from the exported body", name)
		}
	}
	// Cluster-scoped workloads use "_" for the namespace segment.
	cw := w
	cw.Namespace = ""
	if err := s.Export(context.Background(), sinktest.NewBOM(cw, 8)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "dev", "_", "Deployment", "llama", "latest.cdx.json")); err != nil {
		t.Fatal(err)
	}
}

func TestOlderExportKeepsLatest(t *testing.T) {
	s := newSink(t)
	w := sinktest.Workload("order")
	b1, b2 := sinktest.NewBOM(w, 10), sinktest.NewBOM(w, 20)
	for _, b := range []sinks.BOM{b2, b1} {
		if err := s.Export(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if got := inspect(t, s, w); got != (sinktest.Stored{BOMs: 2, Latest: b2.BomHash}) {
		t.Fatalf("got %+v", got)
	}
}

func TestTombstoneOrdering(t *testing.T) {
	ctx := context.Background()
	s := newSink(t)
	w := sinktest.Workload("recreated")
	b := sinktest.NewBOM(w, 30)
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	// A tombstone of an older incarnation of the same name changes nothing.
	if err := s.Tombstone(ctx, sinktest.NewTombstone(w, 20)); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s, w); got.Tombstoned {
		t.Fatalf("stale tombstone applied: %+v", got)
	}
	if err := s.Tombstone(ctx, sinktest.NewTombstone(w, 40)); err != nil {
		t.Fatal(err)
	}
	// An export older than the tombstone is history: stored, not a revival.
	if err := s.Export(ctx, sinktest.NewBOM(w, 35)); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s, w); !got.Tombstoned || got.BOMs != 2 {
		t.Fatalf("got %+v, want 2 BOMs and still tombstoned", got)
	}
	var m marker
	raw, err := os.ReadFile(filepath.Join(s.Dir(), "dev", "ml", "Deployment", "recreated", DeletedFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ChangeSeq != 40 || m.Time.IsZero() {
		t.Fatalf("deleted.json = %s (%v)", raw, err)
	}
}

func TestImmutableFileIsNeverRewritten(t *testing.T) {
	s := newSink(t)
	w := sinktest.Workload("tampered")
	b := sinktest.NewBOM(w, 1)
	dir, _ := s.WorkloadDir(w)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.TrimPrefix(b.BomHash, "sha256:")+Suffix)
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Export(context.Background(), b); !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want a permanent error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{}" {
		t.Fatalf("immutable file rewritten: %s", got)
	}
}

func TestSinkTypeDecodesStrictly(t *testing.T) {
	dir := t.TempDir()
	reg := sinks.Registry{Type: SinkType}
	cfg, err := reg.Decode(Type, map[string]any{"dir": dir, "fsync": false})
	if err != nil {
		t.Fatal(err)
	}
	s, err := reg.New(context.Background(), Type, "archive", cfg, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "archive" || s.(*Sink).Dir() != dir || s.(*Sink).fsync {
		t.Fatalf("got name %q dir %q fsync %v", s.Name(), s.(*Sink).Dir(), s.(*Sink).fsync)
	}
	_, err = reg.Decode(Type, map[string]any{"dir": dir, "layuot": "x"})
	if err == nil || !strings.Contains(err.Error(), `unknown key "layuot" (known: dir, fsync)`) {
		t.Fatalf("got %v, want an error naming the unknown key and the known ones", err)
	}
	_, err = reg.Decode(Type, map[string]any{"fsync": "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("got %v, want an error naming the bad value", err)
	}
	if _, err := New(Config{Name: "bad.name"}, nil); err == nil || !strings.Contains(err.Error(), "name") {
		t.Fatalf("got %v, want an error naming the name", err)
	}
}

func TestTombstoneOfNeverExportedWorkloadWritesNothing(t *testing.T) {
	s := newSink(t)
	w := sinktest.Workload("nginx")
	if err := s.Tombstone(context.Background(), sinktest.NewTombstone(w, 3)); err != nil {
		t.Fatal(err)
	}
	dir, err := s.WorkloadDir(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a tombstone of a workload with no BOM created %s (stat: %v)", dir, err)
	}
}
