package main

// The crash test of the delivery core: the real binary, killed with SIGKILL
// 20 times at random points of a run of 2,750 changes (BOMSTREAM_KILL_WORKLOADS
// workloads, 250 by default, changed ten times) and started again each
// time, must end with every change exported once in effect, none lost, and a
// latest-only sink that never went back.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks/stdout"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// envBin names a prebuilt bomstream binary for the process tests.
const envBin = "BOMSTREAM_BIN"

// bomstreamBinary returns $BOMSTREAM_BIN or a binary built from this
// package with `go build` (the Go build cache makes it cheap). A failed build
// fails the test.
func bomstreamBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(envBin); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s: %v", envBin, err)
		}
		return bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "bomstream")
	if b, err := exec.Command(gobin, "build", "-o", out, ".").CombinedOutput(); err != nil {
		t.Fatalf("build bomstream: %v\n%s", err, b)
	}
	return out
}

// osProcess is one run of the binary; its stdout is appended to a file that
// outlives it.
type osProcess struct {
	cmd    *exec.Cmd
	exited chan error
}

func startProcess(t *testing.T, bin string, stdoutFile, stderrFile *os.File, args ...string) *osProcess {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdoutFile, stderrFile
	cmd.Env = append(os.Environ(), "BOMSTREAM_LOG_LEVEL=info")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &osProcess{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p
}

func (p *osProcess) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatal("the killed process did not exit")
	}
}

func (p *osProcess) stop(t *testing.T) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		return err
	case <-time.After(2 * time.Minute):
		p.kill(t)
		return fmt.Errorf("did not stop within 2 minutes of SIGTERM")
	}
}

const killManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: llm-%03d, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.%d.0
        args: [--model, org/model-%03d]
`

func writeRound(t *testing.T, dir string, workloads, round int) {
	t.Helper()
	for i := range workloads {
		p := filepath.Join(dir, fmt.Sprintf("llm-%03d.yaml", i))
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, fmt.Appendf(nil, killManifest, i, round, i), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil { // a watcher never reads half a file
			t.Fatal(err)
		}
	}
}

// waitRoundExported waits until the latest-only sink's output (stdout
// lines, one per BOM) has shown round r's BOM of every workload.
func waitRoundExported(t *testing.T, outPath string, workloads, r int) {
	marker := []byte(fmt.Sprintf("vllm-openai:v0.%d.0", r))
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(outPath)
		seen := map[string]bool{}
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if !bytes.Contains(line, marker) {
				continue
			}
			if i := bytes.Index(line, []byte(`"name":"llm-`)); i >= 0 && len(line) >= i+15 {
				seen[string(line[i+8:i+15])] = true
			}
		}
		if len(seen) >= workloads {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("round %d was not exported within 3 minutes", r)
}

func TestKill9AtRandomPoints(t *testing.T) {
	bin := bomstreamBinary(t)
	// 250 workloads in CI, each changed ten times: 2,750 changes through 20
	// kills (issue 30 halved the 500 it had, for time; `make soak` kills a
	// process every 20-60 s for half an hour).
	workloads := benchEnvInt(t, "BOMSTREAM_KILL_WORKLOADS", 250)
	const rounds, kills = 11, 20
	dir := t.TempDir()
	tree, data, hist := filepath.Join(dir, "m"), filepath.Join(dir, "data"), filepath.Join(dir, "history")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: history, type: file, config: {dir: %q}}
- {name: latest, type: stdout, runner: {latestOnly: true}}
`, hist))
	outFile, errFile, outPath, errPath := processLogs(t, dir)
	args := []string{"run", "--config", conf, "--manifests", tree, "--interval", "100ms", "--data-dir", data}

	writeRound(t, tree, workloads, 0)
	var mu sync.Mutex
	var killed atomic.Int32
	proc := startProcess(t, bin, outFile, errFile, args...)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for r := 1; r < rounds; r++ {
			// Each round is a change of every workload. The next one comes
			// once half of this one is exported: the rest of it is still on
			// its way when the next versions arrive (and a kill hits both),
			// while no round is written over one the process never saw.
			// The rounds are spread over the kills, however fast the
			// machine: round r waits for its share of them.
			waitRoundExported(t, outPath, workloads/2, r-1)
			for int(killed.Load()) < r*kills/rounds {
				time.Sleep(10 * time.Millisecond)
			}
			writeRound(t, tree, workloads, r)
		}
		waitRoundExported(t, outPath, workloads, rounds-1)
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for k := range kills {
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		mu.Lock()
		proc.kill(t)
		fmt.Fprintf(errFile, "\n=== kill -9 #%d\n", k+1)
		proc = startProcess(t, bin, outFile, errFile, args...)
		mu.Unlock()
		killed.Add(1)
	}
	<-writerDone // the last round is exported
	// The last process is up (it has read the tree) before it is stopped.
	waitSynced(t, errPath, kills)
	drain(t, proc, bin, outFile, errFile, args, 5*time.Minute)
	checkAfterKills(t, data, hist, outPath, workloads, workloads*(rounds-1))
}

// processLogs opens dir/stdout.log and dir/stderr.log for appending, shared
// by every process a test starts, and prints the stderr's tail when the
// test fails.
func processLogs(t *testing.T, dir string) (outFile, errFile *os.File, outPath, errPath string) {
	t.Helper()
	outPath, errPath = filepath.Join(dir, "stdout.jsonl"), filepath.Join(dir, "stderr.log")
	open := func(p string) *os.File {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	outFile, errFile = open(outPath), open(errPath)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(errPath)
			t.Logf("stderr of the processes (tail):\n%s", tail(string(b), 6000))
		}
	})
	return outFile, errFile, outPath, errPath
}

// waitSynced waits until the process started after kill -9 #kills has read
// its manifests (and so handles SIGTERM).
func waitSynced(t *testing.T, errPath string, kills int) {
	t.Helper()
	eventually(t, "the last process synced its manifests", func() bool {
		b, _ := os.ReadFile(errPath)
		_, after, _ := strings.Cut(string(b), fmt.Sprintf("=== kill -9 #%d\n", kills))
		return strings.Contains(after, "manifests synced")
	})
}

// checkAfterKills holds the store and the sinks to what CHANGES says
// happened: one BOMS message per change, one BOM file per change in the
// history sink with its latest at the last change, a latest-only log that
// never went back, and nothing dead-lettered.
func checkAfterKills(t *testing.T, data, hist, outPath string, workloads, minChanges int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bus, err := stream.Open(ctx, stream.Config{DataDir: data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()

	type change struct {
		seq uint64
		w   schemas.Workload
	}
	var changes []change
	lastChange := map[string]uint64{} // uid -> last change seq
	if err := bus.Reader().Messages(ctx, schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
		ev, err := changelog.Decode(m.Data)
		if err != nil {
			return err
		}
		if ev.IsTombstone() {
			t.Errorf("unexpected tombstone at %d for %s", m.Sequence, ev.Data.Workload)
		}
		changes = append(changes, change{m.Sequence, ev.Data.Workload})
		lastChange[ev.Data.Workload.UID] = m.Sequence
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(lastChange) != workloads || len(changes) < minChanges {
		t.Fatalf("CHANGES holds %d changes of %d workloads: the run did not get far", len(changes), len(lastChange))
	}

	bomOf := map[uint64]string{} // change seq -> bomHash
	perChange := map[uint64]int{}
	if err := bus.Reader().Messages(ctx, schemas.StreamBOMs, "", 0, func(m *jetstream.RawStreamMsg) error {
		seq, _ := strconv.ParseUint(m.Header.Get(schemas.HeaderChangeSeq), 10, 64)
		perChange[seq]++
		if m.Header.Get(schemas.HeaderTombstone) == "true" {
			t.Errorf("unexpected tombstone on BOMS for change %d", seq)
		}
		bomOf[seq] = m.Header.Get(schemas.HeaderBomHash)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lost, doubled := 0, 0
	for _, c := range changes {
		switch n := perChange[c.seq]; {
		case n == 0:
			lost++
			if lost <= 5 {
				t.Errorf("change %d of %s has no BOM", c.seq, c.w)
			}
		case n > 1:
			doubled++
			if doubled <= 5 {
				t.Errorf("change %d of %s has %d BOMS messages", c.seq, c.w, n)
			}
		}
	}

	// The history sink: a file per change's BOM, the latest at the last change.
	for _, c := range changes {
		p := filepath.Join(hist, c.w.Cluster, c.w.Namespace, c.w.Kind, c.w.Name, strings.TrimPrefix(bomOf[c.seq], "sha256:")+".cdx.json")
		if _, err := os.Stat(p); err != nil {
			lost++
			if lost <= 10 {
				t.Errorf("history sink lacks change %d of %s: %v", c.seq, c.w.Name, err)
			}
		}
	}
	for _, c := range changes {
		if lastChange[c.w.UID] != c.seq {
			continue
		}
		st := sinkState(t, filepath.Join(hist, c.w.Cluster, c.w.Namespace, c.w.Kind, c.w.Name))
		if st.BomHash != bomOf[c.seq] || st.Tombstone != "" {
			t.Errorf("history sink's state of %s is %+v, want change %d", c.w.Name, st, c.seq)
		}
	}

	// The latest-only sink: per workload, never an older change after a newer.
	f, err := os.Open(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	printed := map[string]uint64{}
	regressions := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	torn := 0
	for sc.Scan() {
		var l stdout.Line
		line := sc.Bytes()
		if len(line) == 0 || (line[0] != '{' && !bytes.Contains(line, []byte(`{"type":`))) {
			continue // the summary of the last run, which shares the stdout
		}
		if err := json.Unmarshal(line, &l); err != nil {
			// A process killed in the middle of a write leaves part of a
			// line, which the next process's first line follows. That
			// export was not recorded as done, so it is printed again.
			i := bytes.LastIndex(line, []byte(`{"type":`))
			if i <= 0 || json.Unmarshal(line[i:], &l) != nil {
				t.Fatalf("an unreadable line in the latest-only sink's output: %v: %.100s", err, sc.Text())
			}
			torn++
		}
		uid := l.Workload.UID
		if l.ChangeSeq < printed[uid] {
			regressions++
			if regressions <= 5 {
				t.Errorf("latest-only sink went back for %s: change %d after %d", l.Workload.Name, l.ChangeSeq, printed[uid])
			}
		}
		printed[uid] = max(printed[uid], l.ChangeSeq)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for uid, last := range lastChange {
		if printed[uid] != last {
			t.Errorf("latest-only sink ends %s at change %d, want %d", uid, printed[uid], last)
		}
	}

	if err := deadletter.New(bus).List(ctx, "", func(d deadletter.Letter) error {
		t.Errorf("dead letter %d from %s: %s", d.ID, d.Stage, d.Reason)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d changes of %d workloads; lost %d, doubled %d; %d lines torn by a kill", len(changes), workloads, lost, doubled, torn)
}

// drain stops the last process cleanly, then runs `run --once` with args,
// which syncs the (unchanged) tree and waits until every stage is done; it
// fails t when either fails or --once takes longer than limit.
func drain(t *testing.T, last *osProcess, bin string, outFile, errFile *os.File, args []string, limit time.Duration) {
	t.Helper()
	if err := last.stop(t); err != nil {
		t.Fatalf("last process: %v", err)
	}
	final := startProcess(t, bin, outFile, errFile, append(slices.Clip(args), "--once")...)
	select {
	case err := <-final.exited:
		if err != nil {
			t.Fatalf("run --once at the end: %v", err)
		}
	case <-time.After(limit):
		final.kill(t)
		t.Fatalf("run --once at the end did not finish within %s", limit)
	}
}
