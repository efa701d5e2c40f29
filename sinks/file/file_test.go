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

// inspect reads the tree the way a person would: BOM files, the state file,
// and the latest link (checked against the state: present and pointing at
// its BOM while current, absent once tombstoned).
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
	var cur State
	if states, err := ReadStates(s.Dir()); err == nil {
		rel, _ := filepath.Rel(s.Dir(), dir)
		cur = states[filepath.ToSlash(rel)]
	}
	_, markErr := os.Stat(filepath.Join(dir, TombstoneFile))
	if (cur.Tombstone != "") != (markErr == nil) {
		t.Errorf("%s: journal says tombstone %q, %s present: %v", w, cur.Tombstone, TombstoneFile, markErr == nil)
	}
	st.Latest, st.Tombstoned = cur.BomHash, cur.Tombstone != ""
	latest, err := os.ReadFile(filepath.Join(dir, LatestFile))
	switch {
	case st.Tombstoned && !errors.Is(err, fs.ErrNotExist):
		t.Errorf("%s tombstoned (%s) but %s is there (%v)", w, cur.Tombstone, LatestFile, err)
	case !st.Tombstoned && cur.BomHash != "" && err != nil:
		t.Errorf("%s: %v", LatestFile, err)
	case !st.Tombstoned && cur.BomHash != "" && schemas.BomHash(latest) != cur.BomHash:
		t.Errorf("%s hashes to %s but the journal says %s", LatestFile, schemas.BomHash(latest), cur.BomHash)
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
	// A tombstone of an older version changes nothing.
	if err := s.Tombstone(ctx, sinktest.NewTombstone(w, 20)); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s, w); got.Tombstoned {
		t.Fatalf("stale tombstone applied: %+v", got)
	}
	ts := sinktest.NewTombstone(w, 40)
	ts.Reason = sinks.ReasonNotServing
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	// An export older than the tombstone is history: stored, not a revival.
	if err := s.Export(ctx, sinktest.NewBOM(w, 35)); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s, w); !got.Tombstoned || got.BOMs != 2 {
		t.Fatalf("got %+v, want 2 BOMs and still tombstoned", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	states, err := ReadStates(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if st := states["dev/ml/Deployment/recreated"]; st.ChangeSeq != 40 || st.Tombstone != sinks.ReasonNotServing || st.Time == "" || st.BomHash != b.BomHash {
		t.Fatalf("journal state %+v", st)
	}
	marker, err := os.ReadFile(filepath.Join(s.Dir(), "dev", "ml", "Deployment", "recreated", TombstoneFile))
	if err != nil || !strings.Contains(string(marker), `"reason":"not-serving"`) {
		t.Fatalf("%s: %s (%v)", TombstoneFile, marker, err)
	}
	// The state survives a new sink on the same tree (a restart).
	s2, err := New(Config{Dir: s.Dir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Export(ctx, sinktest.NewBOM(w, 38)); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s2, w); !got.Tombstoned {
		t.Fatalf("after a restart an older export revived the workload: %+v", got)
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Export(context.Background(), sinktest.NewBOM(sinktest.Workload(fmt.Sprintf("w%d", i)), uint64(i+1)))
			mu.Lock()
			written++
			mu.Unlock()
		}()
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
	if err == nil || !strings.Contains(err.Error(), `unknown key "layuot" (known: dir, flushInterval, fsync)`) {
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

// The journal survives a crash in the middle of an append (the torn line is
// dropped: that version was never acknowledged) and is compacted to one line
// per workload when a sink opens it.
func TestJournalTornLineAndCompaction(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := sinktest.Workload("journaled")
	for seq := uint64(1); seq <= 3; seq++ {
		if err := s.Export(context.Background(), sinktest.NewBOM(w, seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, JournalFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"dir":"dev/ml/Deployment/journaled","changeSeq":9`); err != nil { // torn
		t.Fatal(err)
	}
	f.Close()
	s2, err := New(Config{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b4 := sinktest.NewBOM(w, 4)
	if err := s2.Export(context.Background(), b4); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, s2, w); got.Latest != b4.BomHash || got.BOMs != 4 {
		t.Fatalf("after reopening: %+v", got)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(raw), "\n"); lines != 2 { // compacted to 1, then change 4 appended
		t.Fatalf("journal holds %d lines, want 2:\n%s", lines, raw)
	}
}

// An append that fails half way (a full disk, say) leaves a half line; the
// retry must not glue its first line to it, or that workload's state would
// be lost when the journal is next read.
func TestJournalRetryAfterHalfWrittenAppend(t *testing.T) {
	dir := t.TempDir()
	j := &journal{root: dir}
	a := State{Dir: "c/ns/Deployment/a", BomHash: "sha256:" + strings.Repeat("a", 64), ChangeSeq: 1}
	b := State{Dir: "c/ns/Deployment/b", BomHash: "sha256:" + strings.Repeat("b", 64), ChangeSeq: 2}
	if err := j.put(a); err != nil {
		t.Fatal(err)
	}
	if err := j.put(b); err != nil {
		t.Fatal(err)
	}
	// What the failed append left: the first 20 bytes of its batch.
	if err := os.WriteFile(filepath.Join(dir, JournalFile), j.pending[:20], 0o644); err != nil {
		t.Fatal(err)
	}
	j.failed = true
	if err := j.writePending(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got[a.Dir].BomHash != a.BomHash || got[b.Dir].BomHash != b.BomHash {
		t.Fatalf("states after the retried append: %+v", got)
	}
}
