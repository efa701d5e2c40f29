package main

// One owner per data directory (issue "The store survives its users"):
// black-box through the CLI.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/schemas"
)

// startRun starts `bomstream run` with args in the background (watch mode)
// and returns a stop function that cancels it (as SIGTERM would) and
// returns its result.
func startRun(t *testing.T, c *cli, args ...string) (stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- c.runCtx(ctx, append([]string{"run"}, args...)...) }()
	var once sync.Once
	var r result
	stop = func() result {
		once.Do(func() {
			cancel()
			select {
			case r = <-done:
			case <-time.After(2 * waitFor):
				t.Fatal("run did not stop")
			}
		})
		return r
	}
	t.Cleanup(func() { stop() })
	return stop
}

// Defect: `history` in the same data directory while `run` was busy opened
// the store a second time and destroyed most of it. Now it works through
// the running process and loses nothing; a second `run` is refused with the
// owner's pid; a mistyped --data-dir is an error, never a new empty store.
func TestHistoryDuringRunLosesNothing(t *testing.T) {
	const n = 300
	tree, dir := t.TempDir(), t.TempDir()
	writeSynthetic(t, tree, n)
	data, sinkDir := filepath.Join(dir, "data"), filepath.Join(dir, "boms")
	c := newCLI(t)
	stop := startRun(t, c, "--manifests", tree, "--interval", "200ms", "--data-dir", data, "--sink-dir", sinkDir)
	want := serving(expect(t, tree, "default"))
	var some expectation
	for _, e := range want {
		some = e
		break
	}
	key := wkey(some.Workload)
	// Ask while the pipeline is busy exporting, until it has finished.
	asked := 0
	eventually(t, "every BOM exported while history is asked", func() bool {
		r := c.run("history", key, "--data-dir", data)
		asked++
		if r.err != nil && !strings.Contains(r.err.Error(), "not found") {
			t.Fatalf("history during run: %v\n%s", r.err, r.stderr)
		}
		return countBOMFiles(t, sinkDir) == n
	})
	r := c.run("history", key, "--data-dir", data)
	if r.err != nil || !strings.Contains(r.stdout, report.Short(some.BomHash)) {
		t.Fatalf("history of %s during run: %v\n%s", key, r.err, r.stdout)
	}
	// A second run on the same directory is refused, naming the owner.
	second := c.run("run", "--manifests", tree, "--once", "--data-dir", data, "--sink-dir", sinkDir)
	if second.err == nil || !strings.Contains(second.err.Error(), "in use") || !strings.Contains(second.err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second run: %v", second.err)
	}
	// A mistyped data directory is an error and stays absent.
	typo := filepath.Join(dir, "dta")
	if r := c.run("history", key, "--data-dir", typo); r.err == nil || !strings.Contains(r.err.Error(), "no bomstream data directory") {
		t.Fatalf("history with a mistyped --data-dir: %v", r.err)
	}
	if _, err := os.Stat(typo); !os.IsNotExist(err) {
		t.Fatalf("history created %s", typo)
	}
	if res := stop(); res.err != nil {
		t.Fatalf("run: %v\n%s", res.err, tail(res.stderr, 3000))
	}
	t.Logf("history asked %d times during the run", asked)

	// Nothing was lost: the store still holds every change and every BOM,
	// and a run over the same tree has nothing to do.
	bus := openBus(t, data, "")
	ctx := context.Background()
	for name, stream := range map[string]string{"CHANGES": schemas.StreamChanges, "BOMS": schemas.StreamBOMs} {
		if last, err := bus.Reader().LastSeq(ctx, stream); err != nil || last != n {
			t.Errorf("%s ends at %d (%v), want %d", name, last, err, n)
		}
	}
	bus.Close()
	r = c.mustRun("run", "--manifests", tree, "--once", "--data-dir", data, "--sink-dir", sinkDir)
	mustContain(t, "rerun", r.stdout, "0 new events", "sink file: 0 exported")
}

// Defect: on an up-to-date directory `run --once` failed about 7% of the
// time with "context canceled". Now it exits 0, every time, with a summary
// that agrees with the sink.
func TestRunOnceUpToDateNeverFlakes(t *testing.T) {
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	dir := t.TempDir()
	data, sinkDir := filepath.Join(dir, "data"), filepath.Join(dir, "boms")
	c := newCLI(t)
	want := serving(expect(t, tree, "default"))
	r := c.mustRun("run", "--manifests", tree, "--once", "--data-dir", data, "--sink-dir", sinkDir)
	mustContain(t, "first run", r.stdout, fmt.Sprintf("sink file: %d exported", len(want)))
	runs := 200
	if testing.Short() {
		runs = 20
	}
	for i := range runs {
		r := c.run("run", "--manifests", tree, "--once", "--data-dir", data, "--sink-dir", sinkDir)
		if r.err != nil {
			t.Fatalf("run %d of %d on an up-to-date directory: %v\n%s", i+1, runs, r.err, tail(r.stderr, 2000))
		}
		if !strings.Contains(r.stdout, "0 new events, 0 tombstones") || !strings.Contains(r.stdout, "sink file: 0 exported, 0 tombstones") {
			t.Fatalf("run %d: summary\n%s", i+1, r.stdout)
		}
	}
	if got := countBOMFiles(t, sinkDir); got != len(want) {
		t.Fatalf("the sink holds %d BOMs, want %d", got, len(want))
	}
}
