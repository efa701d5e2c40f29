package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/sinks/stdout"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/streamtest"
	"github.com/bomstream/bomstream/transformer"
)

// waitFor is the deadline of every bounded wait in these tests: generous,
// so that a loaded 2-core machine never fails them for being slow.
const waitFor = 60 * time.Second

// syncBuffer is an io.Writer that goroutines may share with a reader.
type syncBuffer = streamtest.SyncBuffer

// cli runs the command line in-process, as main does, with a controlled
// environment: variables come from vars only (never from the test process),
// sinks from reg.
type cli struct {
	t        *testing.T
	vars     map[string]string
	reg      sinks.Registry
	httpAddr chan string
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, vars: map[string]string{}, reg: registry.Builtin()}
}

// result is what one command printed and returned.
type result struct {
	stdout, stderr string
	err            error
}

// run executes args with a fresh pair of output buffers and a deadline.
func (c *cli) run(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitFor)
	defer cancel()
	return c.runCtx(ctx, args...)
}

func (c *cli) runCtx(ctx context.Context, args ...string) result {
	var out, errb syncBuffer
	err := run(ctx, args, c.env(&out, &errb))
	return result{stdout: out.String(), stderr: errb.String(), err: err}
}

func (c *cli) env(out, errb *syncBuffer) *env {
	vars := c.vars
	// The stdout sink writes to the process's stdout, which main passes as
	// env.stdout; here it is the command's buffer.
	reg := sinks.Registry{}
	maps.Copy(reg, c.reg)
	if _, ok := reg[stdout.Type]; ok {
		reg[stdout.Type] = stdout.TypeFor(out)
	}
	e := &env{stdout: out, stderr: errb, getenv: func(k string) string { return vars[k] }, sinks: reg}
	if c.httpAddr != nil {
		e.httpAddr = c.httpAddr
	}
	return e
}

// mustRun runs args and fails the test with the command's output on error.
func (c *cli) mustRun(args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.err != nil {
		c.t.Fatalf("bomstream %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, tail(r.stderr, 4000))
	}
	return r
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func isManifest(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// copyManifests copies every manifest file under src into dst, keeping the
// relative paths, and returns how many it copied.
func copyManifests(t *testing.T, src, dst string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isManifest(p) {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return n
}

// examplesDir is the project's own examples, present in every clone.
const examplesDir = "../../examples"

// wkey names a workload as the CLI does: namespace/Kind/name.
func wkey(w schemas.Workload) string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// expectation is what the pipeline should make of one workload, computed
// here independently of it: the manifest source's Load and the renderer's
// Render, called directly.
type expectation struct {
	Workload  schemas.Workload
	InputHash string
	BomHash   string // "" when Render gives no BOM
	BOM       []byte
	Source    string // Inputs.Source, "file:<path relative to the tree>"
}

func expect(t *testing.T, dir, cluster string) map[string]expectation {
	t.Helper()
	n, err := collector.NewNormalizer(collector.Config{Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: process.Version()})
	if err != nil {
		t.Fatal(err)
	}
	loaded := files.Load(dir, dir, n)
	if loaded.Err != nil {
		t.Fatalf("load %s: %v", dir, loaded.Err)
	}
	out := map[string]expectation{}
	for _, ev := range loaded.Events {
		res, err := r.Render(ev)
		if err != nil {
			t.Fatalf("render %s: %v", ev.Subject, err)
		}
		k := wkey(ev.Data.Workload)
		if _, dup := out[k]; dup {
			t.Fatalf("Load gave %s twice", k)
		}
		e := expectation{Workload: ev.Data.Workload, InputHash: ev.Data.InputHash, Source: ev.Data.Inputs.Source}
		if res.BOM != nil {
			e.BOM, e.BomHash = res.BOM, schemas.BomHash(res.BOM)
		}
		out[k] = e
	}
	return out
}

// serving keeps the expectations that have a BOM.
func serving(all map[string]expectation) map[string]expectation {
	out := map[string]expectation{}
	for k, e := range all {
		if e.BomHash != "" {
			out[k] = e
		}
	}
	return out
}

// workloadDir is where the file sink keeps w, relative to its root.
func workloadDir(w schemas.Workload) string {
	ns := w.Namespace
	if ns == "" {
		ns = "_"
	}
	return filepath.Join(w.Cluster, ns, w.Kind, w.Name)
}

// bomFilePath is the immutable file of bomHash in w's directory.
func bomFilePath(w schemas.Workload, bomHash string) string {
	return filepath.Join(workloadDir(w), strings.TrimPrefix(bomHash, "sha256:")+".cdx.json")
}

var immutableBOM = regexp.MustCompile(`^[0-9a-f]{64}\.cdx\.json$`)

// bomFiles maps each workload directory (relative to root) to the immutable
// BOM files in it; latest.cdx.json is a copy and is not counted.
func bomFiles(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !immutableBOM.MatchString(d.Name()) {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		out[rel] = append(out[rel], d.Name())
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func countBOMFiles(t *testing.T, root string) int {
	n := 0
	for _, names := range bomFiles(t, root) {
		n += len(names)
	}
	return n
}

// fileState is what a listing remembers of one file.
type fileState struct {
	Size  int64
	MTime time.Time
	Sum   string
}

// listing is every file under root (relative path -> state).
func listing(t *testing.T, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(root, p)
		out[rel] = fileState{Size: fi.Size(), MTime: fi.ModTime(), Sum: hex.EncodeToString(sum[:])}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// diff compares two listings: files that appeared, changed and vanished.
func diff(before, after map[string]fileState) (added, changed, removed []string) {
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			added = append(added, p)
		case a != b:
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			removed = append(removed, p)
		}
	}
	sort.Strings(added)
	sort.Strings(changed)
	sort.Strings(removed)
	return added, changed, removed
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// eventually polls cond until it holds or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	bustest.Eventually(t, what, waitFor, cond)
}

// openBus opens the stream of a finished run: the embedded store in dataDir,
// or the external server at url.
func openBus(t *testing.T, dataDir, url string) *stream.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	b, err := stream.Open(ctx, stream.Config{DataDir: dataDir, URL: url}, nil)
	if err != nil {
		t.Fatalf("open bus: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// writeFile writes a file, creating its directory.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceIn edits a file in place and fails when old is not in it.
func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	// A new modification time, even on a filesystem with coarse timestamps,
	// so that a watcher sees the edit.
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, tail(s, 6000))
		}
	}
}

func fmtList(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	return fmt.Sprintf("%d: %s", len(xs), strings.Join(xs, ", "))
}
