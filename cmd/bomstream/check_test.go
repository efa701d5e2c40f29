package main

// Tests of a damaged store: a BOMS block file cut in half while nothing
// runs, as a disk or a careless copy leaves it. The store is then opened
// again by the CLI, which must notice, repair what CHANGES can rebuild, and
// never hang over the hole.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/schemas"
)

// bigDeployment is a Deployment of 16 vLLM containers: its BOM is about
// 29 KB, so that 300 of them fill more than one 8 MB block of BOMS and
// cutting the first block leaves a hole with messages after it.
const bigDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: big-%03d, namespace: ml}
spec:
  template:
    spec:
      containers:
`

const bigContainer = `      - name: c%d
        image: vllm/vllm-openai:v0.%d.%d
        command: ["vllm", "serve"]
        args: ["org-%d/model-%d-%d", "--tensor-parallel-size=2", "--max-model-len=8192"]
`

// writeBig writes n big Deployments into one file of dir; the ones whose
// index is in edited run a newer image in their first container.
func writeBig(t *testing.T, dir string, n int, edited ...int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, bigDeployment, i)
		for j := range 16 {
			c := fmt.Sprintf(bigContainer, j, j, i, i, i, j)
			if j == 0 && slices.Contains(edited, i) {
				c = strings.Replace(c, "vllm-openai:v0.0.", "vllm-openai:v0.1.", 1)
			}
			b.WriteString(c)
		}
		b.WriteString("---\n")
	}
	writeFile(t, filepath.Join(dir, "big.yaml"), b.String())
}

// blocks lists the message block files of an embedded store's stream, in
// sequence order.
func blocks(t *testing.T, dataDir, stream string) []string {
	t.Helper()
	dir := filepath.Join(dataDir, "jetstream", "$G", "streams", stream, "msgs")
	names, err := filepath.Glob(filepath.Join(dir, "*.blk"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no block files under %s (%v): the embedded store layout changed", dir, err)
	}
	num := func(p string) int {
		var n int
		fmt.Sscanf(filepath.Base(p), "%d.blk", &n)
		return n
	}
	sort.Slice(names, func(i, j int) bool { return num(names[i]) < num(names[j]) })
	return names
}

// cutFirstBOMSBlock cuts the first block file of BOMS in half. The store
// must have more than one block, so that messages follow the hole.
func cutFirstBOMSBlock(t *testing.T, dataDir string) {
	t.Helper()
	blks := blocks(t, dataDir, "BOMS")
	if len(blks) < 2 {
		t.Fatalf("BOMS has %d block file: the hole would be at the end", len(blks))
	}
	fi, err := os.Stat(blks[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blks[0], fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// store is a data directory with a manifest tree and a configuration
// file whose one sink, "file", writes to sinkDir.
type store struct {
	tree, dataDir, sinkDir, config string
}

// args are the flags every command on the store takes.
func (s store) args(more ...string) []string {
	return append([]string{"--config", s.config, "--data-dir", s.dataDir}, more...)
}

func newStore(t *testing.T) store {
	dir := t.TempDir()
	s := store{tree: filepath.Join(dir, "m"), dataDir: filepath.Join(dir, "data"), sinkDir: filepath.Join(dir, "boms"),
		config: filepath.Join(dir, "bomstream.yaml")}
	writeFile(t, s.config, fmt.Sprintf("sinks:\n- {name: file, type: file, config: {dir: %q}}\n", s.sinkDir))
	return s
}

// damagedStore runs the pipeline once over n big Deployments, then cuts the
// first BOMS block in half while nothing runs.
func damagedStore(t *testing.T, c *cli, n int) store {
	t.Helper()
	s := newStore(t)
	writeBig(t, s.tree, n)
	c.mustRun(append([]string{"run", "--manifests", s.tree, "--once"}, s.args()...)...)
	cutFirstBOMSBlock(t, s.dataDir)
	return s
}

// runWithin runs args and fails the test when the command has not returned
// within d: a hang is a failure, not a stuck test binary.
func (c *cli) runWithin(d time.Duration, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r := c.runCtx(ctx, args...)
	if ctx.Err() != nil {
		c.t.Fatalf("bomstream %s did not finish within %s (it hangs)\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), d, tail(r.stdout, 2000), tail(r.stderr, 2000))
	}
	return r
}

// TestReplayOverGap replays a sink over a BOMS stream with a hole in the
// middle: it finishes, and says which sequences it skipped.
func TestReplayOverGap(t *testing.T) {
	c := newCLI(t)
	s := damagedStore(t, c, 300)
	for _, args := range [][]string{
		s.args("replay", "--sink", "file"),
		s.args("replay", "--sink", "file", "--from-seq", "10"),
		s.args("replay", "--sink", "file", "--since", "1h"),
	} {
		r := c.runWithin(30*time.Second, args...)
		if r.err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), r.err, tail(r.stderr, 3000))
		}
		mustContain(t, strings.Join(args, " ")+" stderr", r.stderr, "BOMS has lost messages", "skipped")
		mustContain(t, strings.Join(args, " ")+" stdout", r.stdout, "0 exported")
	}
}

// lastBOMs reads, from the store in dataDir (nothing running), the last
// message of every workload's subject on BOMS.
func lastBOMs(t *testing.T, dataDir string, want map[string]expectation) map[string][]byte {
	t.Helper()
	bus := openBus(t, dataDir, "")
	defer bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out := map[string][]byte{}
	for k, e := range want {
		m, err := bus.Reader().LastMsg(ctx, schemas.StreamBOMs, schemas.BOMsSubject(e.Workload))
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			out[k] = m.Data
		}
	}
	return out
}

// missingBOMs lists the workloads of want whose current BOM on BOMS is not
// Render's.
func missingBOMs(t *testing.T, dataDir string, want map[string]expectation) []string {
	t.Helper()
	got := lastBOMs(t, dataDir, want)
	var bad []string
	for k, e := range want {
		if !bytes.Equal(got[k], e.BOM) {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	return bad
}

// TestCheckRepairsTruncatedBOMSBlock: `check` finds the BOMs a cut block
// lost, names their workloads and fails; `check --repair` renders them
// again from CHANGES; then every workload's BOM is back and `get` works.
func TestCheckRepairsTruncatedBOMSBlock(t *testing.T) {
	c := newCLI(t)
	s := damagedStore(t, c, 300)
	want := serving(expect(t, s.tree, "default"))
	lost := missingBOMs(t, s.dataDir, want)
	if len(lost) < 50 {
		t.Fatalf("cutting the block lost %d BOMs; the test needs a real hole", len(lost))
	}

	r := c.runWithin(waitFor, s.args("get", lost[0])...)
	if r.err == nil || !strings.Contains(r.err.Error(), "the store lost its BOMs (`bomstream check` tells which)") {
		t.Errorf("get of a workload whose BOM was lost: %v", r.err)
	}
	r = c.runWithin(waitFor, s.args("check")...)
	if r.err == nil {
		t.Fatalf("check of a store that lost %d BOMs succeeded:\n%s", len(lost), r.stdout)
	}
	mustContain(t, "check", r.stdout, "lost", fmt.Sprintf("BOMS lacks the outcome (BOM or tombstone) of %d handled changes", len(lost)),
		fmt.Sprintf("workloads (%d): default/%s", len(lost), lost[0]), "check --repair")

	r = c.runWithin(waitFor, s.args("check", "--repair")...)
	if r.err != nil {
		t.Fatalf("check --repair: %v\n%s\n%s", r.err, r.stdout, tail(r.stderr, 3000))
	}
	mustContain(t, "check --repair", r.stdout, fmt.Sprintf("done (%d)", len(lost)), "after the repair:", "no problems")
	if bad := missingBOMs(t, s.dataDir, want); len(bad) > 0 {
		t.Fatalf("after check --repair, %d workloads lack their BOM: %s", len(bad), fmtList(bad))
	}
	r = c.runWithin(waitFor, s.args("check")...)
	if r.err != nil {
		t.Fatalf("check after the repair: %v\n%s", r.err, r.stdout)
	}
	for _, k := range []string{lost[0], lost[len(lost)/2], lost[len(lost)-1]} {
		r = c.runWithin(waitFor, s.args("get", k)...)
		if r.err != nil || !bytes.Equal([]byte(strings.TrimSuffix(r.stdout, "\n")), want[k].BOM) {
			t.Errorf("get %s after the repair: %v", k, r.err)
		}
		// Settled: reading over the hole no longer warns.
		if strings.Contains(r.stderr, "lost messages") {
			t.Errorf("get %s after the repair still warns:\n%s", k, r.stderr)
		}
	}
	// The sink had them all: the repaired BOMs are skipped, not written again.
	before := listing(t, s.sinkDir)
	r = c.mustRun(append([]string{"run", "--manifests", s.tree, "--once"}, s.args()...)...)
	mustContain(t, "run after the repair", r.stdout, "0 exported")
	if added, changed, removed := diff(before, listing(t, s.sinkDir)); len(added)+len(changed)+len(removed) != 0 {
		t.Errorf("the sink changed: added %s, changed %s, removed %s", fmtList(added), fmtList(changed), fmtList(removed))
	}
}

// TestRunRepairsTruncatedBOMSBlockAtStart: `run` checks the store when it
// starts, says what it found, and renders the lost BOMs again.
func TestRunRepairsTruncatedBOMSBlockAtStart(t *testing.T) {
	c := newCLI(t)
	s := damagedStore(t, c, 300)
	want := serving(expect(t, s.tree, "default"))
	lost := missingBOMs(t, s.dataDir, want)
	if len(lost) < 50 {
		t.Fatalf("cutting the block lost %d BOMs; the test needs a real hole", len(lost))
	}
	r := c.mustRun(append([]string{"run", "--manifests", s.tree, "--once"}, s.args()...)...)
	mustContain(t, "run --once stderr", r.stderr,
		fmt.Sprintf("self-check: BOMS lacks the outcome (BOM or tombstone) of %d handled changes", len(lost)),
		"repaired", "store repaired")
	if bad := missingBOMs(t, s.dataDir, want); len(bad) > 0 {
		t.Fatalf("after run, %d workloads lack their BOM: %s", len(bad), fmtList(bad))
	}
	c.mustRun(s.args("check")...)
	k := lost[len(lost)/2]
	r = c.mustRun(s.args("get", k)...)
	if !bytes.Equal([]byte(strings.TrimSuffix(r.stdout, "\n")), want[k].BOM) {
		t.Errorf("get %s after the start-up repair printed another BOM", k)
	}
}

// outliveDuplicateWindow makes the store in dataDir as old as its
// duplicate window: BOMS forgets the message ids it stored, as it does
// two minutes after a run, so that a second publish of a BOM is stored
// again instead of being dropped. The window is cut to 100 ms, and the
// wait lasts until the last BOM's id is forgotten: a probe with that id
// and an expected last id no message has is acked as a duplicate while
// the id is remembered and refused after, storing nothing either way.
//
// The server is restarted after the window is cut: a running stream whose
// purge timer fires before it takes the new window keeps the old one (up
// to two minutes) for the ids it holds, while a starting one loads only
// the ids of its new window.
func outliveDuplicateWindow(t *testing.T, dataDir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	bus := openBus(t, dataDir, "")
	_, js := bus.Raw()
	s, err := js.Stream(ctx, schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, schemas.SubjectBOMsPrefix+">")
	if err != nil || last.Header.Get(jetstream.MsgIDHeader) == "" {
		t.Fatalf("the last BOM and its id: %v", err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	bus.Close()
	bus = openBus(t, dataDir, "")
	defer bus.Close()
	_, js = bus.Raw()
	eventually(t, "BOMS forgets the message ids it stored", func() bool {
		probe := &nats.Msg{Subject: last.Subject, Header: nats.Header{}}
		_, err := js.PublishMsg(ctx, probe, jetstream.WithMsgID(last.Header.Get(jetstream.MsgIDHeader)), jetstream.WithExpectLastMsgID("no message has this id"))
		var apiErr *jetstream.APIError
		return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrWrongLastMsgID
	})
}

// jsErrWrongLastMsgID is JetStream's error code for a publish whose
// expected last message id is not the stream's.
const jsErrWrongLastMsgID = 10070

// bomsMessages counts the messages of BOMS in dataDir.
func bomsMessages(t *testing.T, dataDir string) uint64 {
	t.Helper()
	bus := openBus(t, dataDir, "")
	defer bus.Close()
	st, err := bus.Reader().State(context.Background(), schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	return st.Msgs
}

// TestLostTransformerStateDoesNotRepublish: a transformer consumer whose
// state was emptied (or removed) starts again from the first change; the
// BOMs already on BOMS are not published a second time and history shows
// every version once.
func TestLostTransformerStateDoesNotRepublish(t *testing.T) {
	obs := func(dataDir string) string {
		return filepath.Join(dataDir, "jetstream", "$G", "streams", "CHANGES", "obs", "transformer")
	}
	for _, damage := range []struct {
		name string
		do   func(t *testing.T, dataDir string)
	}{
		{"state file emptied", func(t *testing.T, dataDir string) {
			if err := os.Truncate(filepath.Join(obs(dataDir), "o.dat"), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"consumer removed", func(t *testing.T, dataDir string) {
			if err := os.RemoveAll(obs(dataDir)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			c := newCLI(t)
			s := newStore(t)
			copyManifests(t, examplesDir, s.tree)
			want := serving(expect(t, s.tree, "default"))
			c.mustRun(append([]string{"run", "--manifests", s.tree, "--once"}, s.args()...)...)
			n := bomsMessages(t, s.dataDir)
			if n != uint64(len(want)) {
				t.Fatalf("BOMS holds %d messages after the first run, want %d", n, len(want))
			}
			outliveDuplicateWindow(t, s.dataDir)
			damage.do(t, s.dataDir)

			r := c.mustRun(append([]string{"run", "--manifests", s.tree, "--once"}, s.args()...)...)
			if got := bomsMessages(t, s.dataDir); got != n {
				t.Errorf("BOMS holds %d messages after the restart, want %d: BOMs were published again\n%s", got, n, tail(r.stderr, 3000))
			}
			for k := range want {
				r := c.mustRun(s.args("history", k)...)
				if rows := strings.Count(r.stdout, "\n") - 2; rows != 1 {
					t.Errorf("history %s shows %d versions, want 1:\n%s", k, rows, r.stdout)
				}
			}
			c.mustRun(s.args("check")...)
		})
	}
}

// historyRows are the version rows of `history` output.
func historyRows(out string) []string {
	var rows []string
	for line := range strings.SplitSeq(out, "\n") {
		if len(line) > 0 && line[0] >= '0' && line[0] <= '9' {
			rows = append(rows, line)
		}
	}
	return rows
}

// TestHistoryOverGap: a workload's first version is lost with the block,
// its second is not. history finishes and warns; after the repair it shows
// both versions, once each and in order, and get finds each.
func TestHistoryOverGap(t *testing.T) {
	c := newCLI(t)
	s := newStore(t)
	// The manifests' modification times are the observation times.
	at := func(when time.Time) {
		if err := os.Chtimes(filepath.Join(s.tree, "big.yaml"), when, when); err != nil {
			t.Fatal(err)
		}
	}
	writeBig(t, s.tree, 300)
	at(t1)
	runOnce := func() { c.mustRun(append([]string{"run", "--manifests", s.tree, "--once"}, s.args()...)...) }
	runOnce()
	// The workload whose BOM is in the middle of the first block.
	bus := openBus(t, s.dataDir, "")
	m, err := bus.Reader().GetMsg(context.Background(), schemas.StreamBOMs, 200)
	if err != nil || m == nil {
		t.Fatalf("BOMS 200: %v", err)
	}
	bm, err := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	w := bm.Workload
	bus.Close()
	var idx int
	fmt.Sscanf(w.Name, "big-%d", &idx)
	key := wkey(w)
	first := expect(t, s.tree, "default")[key]
	writeBig(t, s.tree, 300, idx)
	at(t2)
	between := t1.Add(12 * time.Hour)
	second := expect(t, s.tree, "default")[key]
	if first.BomHash == second.BomHash {
		t.Fatal("the edit did not change the BOM")
	}
	runOnce()
	cutFirstBOMSBlock(t, s.dataDir)

	r := c.runWithin(waitFor, s.args("history", key)...)
	if r.err != nil {
		t.Fatalf("history over the hole: %v\n%s", r.err, r.stderr)
	}
	mustContain(t, "history stderr", r.stderr, "BOMS has lost messages", "skipped sequences")
	if rows := historyRows(r.stdout); len(rows) != 1 || !strings.Contains(rows[0], report.Short(second.BomHash)) {
		t.Fatalf("history over the hole shows %d versions, want only the second:\n%s", len(rows), r.stdout)
	}

	c.mustRun(s.args("check", "--repair")...)
	r = c.mustRun(s.args("history", key)...)
	rows := historyRows(r.stdout)
	if len(rows) != 2 || !strings.Contains(rows[0], report.Short(first.BomHash)) || !strings.Contains(rows[1], report.Short(second.BomHash)) {
		t.Fatalf("history after the repair: want the two versions once each, oldest first:\n%s", r.stdout)
	}
	r = c.mustRun(s.args("get", key)...)
	if !bytes.Equal([]byte(strings.TrimSuffix(r.stdout, "\n")), second.BOM) {
		t.Errorf("get after the repair did not print the second BOM")
	}
	r = c.mustRun(s.args("get", "--at", between.UTC().Format(time.RFC3339Nano), key)...)
	if !bytes.Equal([]byte(strings.TrimSuffix(r.stdout, "\n")), first.BOM) {
		t.Errorf("get --at between the versions did not print the first BOM")
	}
}
