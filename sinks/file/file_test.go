package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// inspect reads the tree the way a person would: BOM files (each checked
// against its name), the latest link and the tombstone marker, never both.
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
		case strings.HasPrefix(n, tmpPrefix):
			t.Errorf("temporary file left behind: %s", n)
		case n == LatestFile || n == TombstoneFile:
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
	cur, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, latestErr := os.Stat(filepath.Join(dir, LatestFile))
	if cur.Tombstone != "" && latestErr == nil {
		t.Errorf("%s: both %s and %s are there", w, LatestFile, TombstoneFile)
	}
	st.Latest, st.Tombstoned = cur.BomHash, cur.Tombstone != ""
	return st
}

// outage takes the tree away and puts a file in its place, so that every
// path under it fails (ENOTDIR), or puts it back. A read-only directory
// would not do: the tests may run as root, whom permissions do not stop.
func outage(t *testing.T, ss sinks.Sink, down bool) {
	t.Helper()
	root := ss.(*Sink).Dir()
	away := root + ".away"
	if down {
		if err := os.Rename(root, away); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root, []byte("the store is down\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, root); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	bad := func(mut func(*schemas.Workload)) sinks.BOM {
		w := sinktest.Workload("x")
		mut(&w)
		return sinktest.NewBOM(w, 1)
	}
	traversal := bad(func(w *schemas.Workload) { w.Name = ".." })
	sinktest.Run(t, func(t *testing.T) sinks.Sink { return newSink(t) }, sinktest.Options{
		Inspect: inspect,
		Outage:  outage,
		Type:    SinkType,
		Config:  map[string]any{"dir": t.TempDir(), "fsync": true, "flushInterval": "5ms"},
		// The tree is local and made by the first write; `bomstream sink
		// check` reports that the file sink has no checks.
		NoChecker: "the file sink has no checks: its tree is made by the first write",
		Invalid: []sinks.BOM{
			traversal,
			bad(func(w *schemas.Workload) { w.Namespace = "../../etc" }),
			bad(func(w *schemas.Workload) { w.Cluster = "." }),
			bad(func(w *schemas.Workload) { w.Kind = `a\b` }),
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

// The marker says why and what it retired, ReadStates reads it, and a new
// sink on the same tree (a restart) knows the workload is tombstoned: an
// older BOM does not revive it, a newer one does.
func TestTombstoneMarkerAndRestart(t *testing.T) {
	ctx := context.Background()
	s := newSink(t)
	w := sinktest.Workload("recreated")
	b := sinktest.NewBOM(w, 30)
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	ts := sinktest.NewTombstone(w, 40)
	ts.Reason = sinks.ReasonNotServing
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	states, err := ReadStates(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if st := states["dev/ml/Deployment/recreated"]; st.ChangeSeq != 40 || st.Tombstone != sinks.ReasonNotServing || st.Time == "" || st.BomHash != b.BomHash || len(states) != 1 {
		t.Fatalf("states %+v", states)
	}
	marker, err := os.ReadFile(filepath.Join(s.Dir(), "dev", "ml", "Deployment", "recreated", TombstoneFile))
	if err != nil || !strings.Contains(string(marker), `"reason":"not-serving"`) || !strings.Contains(string(marker), `"bomHash":"`+b.BomHash+`"`) {
		t.Fatalf("%s: %s (%v)", TombstoneFile, marker, err)
	}
	s2, err := New(Config{Dir: s.Dir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	older := sinktest.NewBOM(w, 38)
	older.Superseded = true
	if err := s2.Export(ctx, older); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s2, w); !got.Tombstoned || got.BOMs != 2 {
		t.Fatalf("after a restart an older export revived the workload: %+v", got)
	}
	if err := s2.Tombstone(ctx, ts); err != nil { // redelivered: nothing changes
		t.Fatal(err)
	}
	b50 := sinktest.NewBOM(w, 50)
	if err := s2.Export(ctx, b50); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s2, w); got.Tombstoned || got.Latest != b50.BomHash {
		t.Fatalf("a newer export did not revive the workload: %+v", got)
	}
}

// A BOM file is named by the hash of its bytes: a file there whose bytes
// do not match is damage (a torn write, a stray edit) and is replaced.
func TestDamagedFileIsRewritten(t *testing.T) {
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
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, b.Body) {
		t.Fatalf("damaged file kept: %s", got)
	}
}

// Temporary files a crash left are removed when the sink first looks at
// their directory.
func TestStaleTemporaryFilesAreRemoved(t *testing.T) {
	s := newSink(t)
	w := sinktest.Workload("crashed")
	if err := s.Export(context.Background(), sinktest.NewBOM(w, 1)); err != nil {
		t.Fatal(err)
	}
	dir, _ := s.WorkloadDir(w)
	stale := filepath.Join(dir, tmpPrefix+"123456")
	if err := os.WriteFile(stale, []byte("half a bom"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := New(Config{Dir: s.Dir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Export(context.Background(), sinktest.NewBOM(w, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("%s is still there (%v)", stale, err)
	}
	inspect(t, s2, w) // fails on any temporary file left
}

// Exports in flight together share flushes: durability costs one flush per
// batch, and no Export returns before a flush that began after its writes.
func TestGroupCommit(t *testing.T) {
	s := newSink(t)
	var mu sync.Mutex
	flushes, written := 0, 0
	inner := s.commit.flush
	s.commit.flush = func() error {
		mu.Lock()
		flushes++
		mu.Unlock()
		return inner()
	}
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.Export(context.Background(), sinktest.NewBOM(sinktest.Workload(fmt.Sprintf("w%d", i)), uint64(i+1)))
			mu.Lock()
			written++
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if flushes == 0 || flushes >= n {
		t.Fatalf("%d flushes for %d concurrent exports, want at least one and fewer than one each", flushes, n)
	}
	// A flush error reaches every export of its batch, as a transient error.
	s.commit.flush = func() error { return errors.New("disk on fire") }
	err := s.Export(context.Background(), sinktest.NewBOM(sinktest.Workload("late"), 1))
	if err == nil || sinks.IsPermanent(err) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("export with a failing flush: %v, want a transient error naming the cause", err)
	}
}

func TestSinkTypeDecodes(t *testing.T) {
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
