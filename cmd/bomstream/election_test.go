package main

// run --once through a leader election, as a user meets it (issue 30): a
// cluster of three nats-server processes, R3 streams, `bomstream run
// --manifests DIR --once` as a process, and the server leading CHANGES
// stopped (SIGTERM, no hand-over) at a random point of the run: while the
// process starts, after a random share of the BOMs is exported, or once
// all are and it drains. Every run must exit 0 with every workload
// exported exactly once.
//
// CI runs BOMSTREAM_ELECTION_RUNS (default 3) runs over
// BOMSTREAM_ELECTION_WORKLOADS (default 600) workloads; `make
// soak-election` runs the issue's size, 10 runs over 3,000.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks/stdout"
	"github.com/bomstream/bomstream/stream/streamtest"
)

func TestRunOnceThroughLeaderStop(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("processes on a 3-node cluster")
	}
	bin := bomstreamBinary(t)
	workloads := benchEnvInt(t, "BOMSTREAM_ELECTION_WORKLOADS", 600)
	runs := benchEnvInt(t, "BOMSTREAM_ELECTION_RUNS", 3)
	tree := filepath.Join(t.TempDir(), "manifests")
	writeSynthetic(t, tree, workloads)
	for i := range runs {
		t.Run(fmt.Sprintf("run %d", i+1), func(t *testing.T) {
			r := runThroughLeaderStop(t, bin, tree, workloads, randomStopPoint(workloads))
			t.Logf("rc=%d %s; leader %s stopped %s, at %s; %d exported", r.rc, r.took.Round(100*time.Millisecond),
				r.leader, r.stoppedAt.Round(100*time.Millisecond), r.point, r.exported)
		})
	}
}

// stopPoint is when a run stops the leader: after delay from the start
// when bomsBefore is 0, else once bomsBefore BOMs were exported.
type stopPoint struct {
	delay      time.Duration
	bomsBefore int
}

func (p stopPoint) String() string {
	if p.bomsBefore == 0 {
		return fmt.Sprintf("%s after the start", p.delay)
	}
	return fmt.Sprintf("%d BOMs exported", p.bomsBefore)
}

// randomStopPoint is while the process starts (a fifth of the runs),
// once every BOM is exported and it drains (a tenth), or after a random
// share of the BOMs.
func randomStopPoint(workloads int) stopPoint {
	switch f := rand.Float64(); {
	case f < 0.2:
		return stopPoint{delay: time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))}
	case f < 0.3:
		return stopPoint{bomsBefore: workloads}
	default:
		return stopPoint{bomsBefore: 1 + rand.IntN(workloads-1)}
	}
}

type leaderStopRun struct {
	rc              int
	took, stoppedAt time.Duration
	leader          string
	point           stopPoint
	exported        int
}

// runThroughLeaderStop is one run: a new cluster, run --once over tree
// into a file sink and a stdout sink, the CHANGES leader stopped at point;
// it fails t unless the process exits 0 with every workload exported once.
func runThroughLeaderStop(t *testing.T, bin, tree string, workloads int, point stopPoint) leaderStopRun {
	c := streamtest.StartCluster(t, 3)
	dir := t.TempDir()
	hist := filepath.Join(dir, "boms")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`stream: {url: %q, replicas: 3}
sinks:
- {name: files, type: file, config: {dir: %q}}
- {name: lines, type: stdout}
`, c.URL(), hist))
	outFile, errFile, outPath, _ := processLogs(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := leaderStopRun{rc: -1, point: point}
	start := time.Now()
	proc := startProcess(t, bin, outFile, errFile, "run", "--manifests", tree, "--once", "--config", conf)
	defer func() { _ = proc.cmd.Process.Kill() }() // after a failure
	lines := &lineCounter{path: outPath}
	var exitErr error
	exited := false
	for !exited && r.leader == "" {
		select {
		case exitErr = <-proc.exited:
			exited = true
			continue
		case <-ctx.Done():
			t.Fatalf("no stop point (%s) within 5 minutes", point)
		case <-time.After(20 * time.Millisecond):
		}
		due := point.bomsBefore == 0 && time.Since(start) >= point.delay ||
			point.bomsBefore > 0 && lines.count(t) >= point.bomsBefore
		if due {
			r.leader, r.stoppedAt = stopLeader(t, ctx, c), time.Since(start)
		}
	}
	if !exited {
		select {
		case exitErr = <-proc.exited:
		case <-ctx.Done():
			t.Fatalf("run --once still running 5 minutes after its start (leader %s stopped at %s)", r.leader, point)
		}
	}
	r.took = time.Since(start)
	r.rc = exitCode(exitErr)
	if r.leader == "" {
		t.Errorf("run --once exited (rc %d) before the stop point %s", r.rc, point)
	}
	if r.rc != 0 {
		t.Errorf("run --once exited %d (%v) with the leader of CHANGES stopped at %s", r.rc, exitErr, point)
	}
	r.exported = checkExportedOnce(t, hist, outPath, workloads)
	return r
}

// stopLeader stops the node leading CHANGES and returns its name.
func stopLeader(t *testing.T, ctx context.Context, c *streamtest.Cluster) string {
	t.Helper()
	for {
		nd, err := c.StreamLeader(ctx, schemas.StreamChanges)
		if err == nil && nd != nil {
			nd.Stop()
			return nd.Name
		}
		if ctx.Err() != nil {
			t.Fatalf("no leader of CHANGES found to stop: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // not provisioned yet
	}
}

// exitCode is the process's exit status, -1 when it did not exit by itself.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	return -1
}

// lineCounter counts, as the file grows, the stdout sink's lines in it.
type lineCounter struct {
	path string
	off  int64
	part []byte
	n    int
}

func (l *lineCounter) count(t *testing.T) int {
	f, err := os.Open(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	l.off += int64(len(b))
	b = append(l.part, b...)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		if bytes.HasPrefix(b[:i], []byte(`{"type":`)) {
			l.n++
		}
		b = b[i+1:]
	}
	l.part = append(l.part[:0], b...)
	return l.n
}

// checkExportedOnce fails t unless the stdout sink printed every one of
// the workloads' BOMs exactly once and the file sink holds one BOM and its
// latest pointer per workload; it returns how many the stdout sink printed.
func checkExportedOnce(t *testing.T, hist, outPath string, workloads int) int {
	t.Helper()
	f, err := os.Open(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	perUID := map[string]int{}
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if !bytes.HasPrefix(sc.Bytes(), []byte(`{"type":`)) {
			continue
		}
		var l stdout.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout sink line: %v", err)
		}
		perUID[l.Workload.UID]++
		lines++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	twice := 0
	for _, n := range perUID {
		if n > 1 {
			twice++
		}
	}
	if len(perUID) != workloads || twice > 0 {
		t.Errorf("stdout sink: %d lines, %d workloads, %d printed more than once; want %d, each once", lines, len(perUID), twice, workloads)
	}
	boms := bomFiles(t, hist)
	latest, versions := 0, 0
	for dir, files := range boms {
		versions += len(files)
		if _, err := os.Stat(filepath.Join(hist, dir, "latest.cdx.json")); err == nil {
			latest++
		}
	}
	if len(boms) != workloads || latest != workloads || versions != workloads {
		t.Errorf("file sink: %d workloads, %d latest, %d versions; want %d of each", len(boms), latest, versions, workloads)
	}
	return lines
}
