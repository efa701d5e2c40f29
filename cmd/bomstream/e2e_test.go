package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/stream/streamtest"
)

// flow is one scenario of `run --once` over a tree of manifests: a first
// sync, an edit of one image tag, the deletion of one file, and a sync that
// has nothing to do.
type flow struct {
	tree       string   // the manifests, a copy in a temp dir
	extra      []string // flags selecting the stream (--data-dir or --nats-url)
	edit       string   // file (relative to tree) whose image tag changes
	editFrom   string
	editTo     string
	editKey    string // the workload it holds
	remove     string // file (relative to tree) to delete
	present    []string
	absent     []string
	historyKey string // workload to query with history and get; "" skips
}

func (f flow) run(t *testing.T) {
	c := newCLI(t)
	sinkDir := filepath.Join(t.TempDir(), "boms")
	once := func() result {
		t.Helper()
		args := append([]string{"run", "--manifests", f.tree, "--once", "--sink-dir", sinkDir}, f.extra...)
		return c.mustRun(args...)
	}

	// 1. First sync: exactly one BOM per serving workload.
	all := expect(t, f.tree, "default")
	want := serving(all)
	if len(want) == 0 || len(want) == len(all) {
		t.Fatalf("expected serving and non-serving workloads in %s: %d of %d serve", f.tree, len(want), len(all))
	}
	for _, k := range f.present {
		if _, ok := want[k]; !ok {
			t.Fatalf("independent expectation lacks %s; serving: %v", k, sortedKeys(want))
		}
	}
	for _, k := range f.absent {
		if _, ok := all[k]; !ok {
			t.Fatalf("%s is not a workload of the tree", k)
		}
		if _, ok := want[k]; ok {
			t.Fatalf("independent expectation has a BOM for %s", k)
		}
	}
	r := once()
	checkSink(t, sinkDir, want, nil)
	for _, k := range f.absent {
		if _, err := os.Stat(filepath.Join(sinkDir, workloadDir(all[k].Workload))); !os.IsNotExist(err) {
			t.Errorf("sink has a directory for %s, which serves nothing (stat: %v)", k, err)
		}
	}
	for _, k := range sortedKeys(want) {
		if !summaryHas(r.stdout, k) {
			t.Errorf("summary on stdout has no row for %s", k)
		}
	}
	for _, k := range f.absent {
		if summaryHas(r.stdout, k) {
			t.Errorf("summary on stdout lists %s, which serves nothing", k)
		}
	}
	mustContain(t, "summary", r.stdout,
		fmt.Sprintf("%d workloads read, %d serving (one BOM each)", len(all), len(want)),
		fmt.Sprintf("sink file: %d exported, 0 tombstones", len(want)))
	first := want[f.editKey]
	// Every BOMS message of the first run was stored before this instant,
	// every one of the second run after it.
	afterFirst := time.Now()

	// 2. Edit one image tag: one new immutable file, for that workload only.
	before := listing(t, sinkDir)
	replaceIn(t, filepath.Join(f.tree, f.edit), f.editFrom, f.editTo)
	all2 := expect(t, f.tree, "default")
	want2 := serving(all2)
	second := want2[f.editKey]
	if second.BomHash == "" || second.BomHash == first.BomHash || second.InputHash == first.InputHash {
		t.Fatalf("edit of %s should change the inputs and the BOM of %s", f.edit, f.editKey)
	}
	r = once()
	added, changed, removed := diff(before, listing(t, sinkDir))
	wdir := workloadDir(second.Workload)
	if len(added) != 1 || added[0] != bomFilePath(second.Workload, second.BomHash) {
		t.Errorf("after the edit: added %s, want only %s", fmtList(added), bomFilePath(second.Workload, second.BomHash))
	}
	for _, p := range changed {
		if p != filepath.Join(wdir, "latest.cdx.json") {
			t.Errorf("after the edit: %s changed; only %s's latest pointer may", p, f.editKey)
		}
	}
	if len(removed) != 0 {
		t.Errorf("after the edit: removed %s", fmtList(removed))
	}
	checkSink(t, sinkDir, want2, map[string]expectation{f.editKey: first})
	mustContain(t, "summary after the edit", r.stdout, "1 new events, 0 tombstones", "sink file: 1 exported")

	if f.historyKey != "" {
		checkHistory(t, c, f, first, second, afterFirst)
	}

	// 3. Delete a file: a tombstone for each of its workloads, nothing else.
	var gone []expectation
	for _, e := range all2 {
		if e.Source == "file:"+filepath.ToSlash(f.remove) {
			gone = append(gone, e)
		}
	}
	if len(gone) == 0 {
		t.Fatalf("%s holds no workload", f.remove)
	}
	before = listing(t, sinkDir)
	if err := os.Remove(filepath.Join(f.tree, f.remove)); err != nil {
		t.Fatal(err)
	}
	r = once()
	added, changed, removed = diff(before, listing(t, sinkDir))
	var wantAdded, wantRemoved []string
	for _, e := range gone {
		if e.BomHash == "" {
			t.Fatalf("pick a file whose workloads all serve: %s has %s", f.remove, wkey(e.Workload))
		}
		wantAdded = append(wantAdded, filepath.Join(workloadDir(e.Workload), "tombstone.json"))
		wantRemoved = append(wantRemoved, filepath.Join(workloadDir(e.Workload), "latest.cdx.json"))
	}
	// The latest link goes, a marker says why; the BOMs stay as history.
	if fmtList(added) != fmtList(sortStrings(wantAdded)) || len(changed) != 0 || fmtList(removed) != fmtList(sortStrings(wantRemoved)) {
		t.Errorf("after deleting %s: added %s (want %s), changed %s, removed %s (want %s)",
			f.remove, fmtList(added), fmtList(sortStrings(wantAdded)), fmtList(changed), fmtList(removed), fmtList(sortStrings(wantRemoved)))
	}
	for _, e := range gone {
		if st := sinkState(t, filepath.Join(sinkDir, workloadDir(e.Workload))); st.Tombstone != "deleted" || st.BomHash != e.BomHash {
			t.Errorf("%s: state after deletion %+v", wkey(e.Workload), st)
		}
	}
	mustContain(t, "summary after the deletion", r.stdout,
		fmt.Sprintf("0 new events, %d tombstones", len(gone)), fmt.Sprintf("sink file: 0 exported, %d tombstones", len(gone)))
	// 4. Nothing changed: nothing is written.
	before = listing(t, sinkDir)
	r = once()
	added, changed, removed = diff(before, listing(t, sinkDir))
	if len(added)+len(changed)+len(removed) != 0 {
		t.Errorf("a run over unchanged inputs touched the sink: added %s, changed %s, removed %s",
			fmtList(added), fmtList(changed), fmtList(removed))
	}
	mustContain(t, "summary of the idle run", r.stdout, "0 new events, 0 tombstones", "sink file: 0 exported, 0 tombstones")

	// 5. Delete the edited workload: get says it is gone.
	if f.historyKey != "" {
		if err := os.Remove(filepath.Join(f.tree, f.edit)); err != nil {
			t.Fatal(err)
		}
		once()
		if st := sinkState(t, filepath.Join(sinkDir, wdir)); st.Tombstone != "deleted" {
			t.Errorf("no tombstone for %s: state %+v", f.historyKey, st)
		}
		if _, err := os.Stat(filepath.Join(sinkDir, wdir, "latest.cdx.json")); !os.IsNotExist(err) {
			t.Errorf("%s is deleted but keeps latest.cdx.json (%v)", f.historyKey, err)
		}
		checkDeleted(t, c, f)
	}
}

func sortStrings(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

// summaryHas reports whether the summary table has a row for key.
func summaryHas(stdout, key string) bool {
	for line := range strings.SplitSeq(stdout, "\n") {
		if strings.HasPrefix(line, key+" ") {
			return true
		}
	}
	return false
}

// checkSink asserts that sinkDir holds, for every workload of want, its BOM
// byte for byte (plus the older versions in older), and no other BOM.
func checkSink(t *testing.T, sinkDir string, want, older map[string]expectation) {
	t.Helper()
	got := bomFiles(t, sinkDir)
	wantDirs := map[string]bool{}
	for k, e := range want {
		dir := workloadDir(e.Workload)
		wantDirs[dir] = true
		n := 1
		if _, ok := older[k]; ok {
			n = 2
		}
		if len(got[dir]) != n {
			t.Errorf("%s: %d BOM files %v, want %d", k, len(got[dir]), got[dir], n)
			continue
		}
		b, err := os.ReadFile(filepath.Join(sinkDir, bomFilePath(e.Workload, e.BomHash)))
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if !bytes.Equal(b, e.BOM) {
			t.Errorf("%s: exported BOM differs from Render's", k)
		}
	}
	for dir := range got {
		if !wantDirs[dir] {
			t.Errorf("sink holds BOMs %v for %s, which should have none", got[dir], dir)
		}
	}
}

// TestRunOnceExamples is the whole flow over the project's own examples, so
// that a plain clone exercises it.
func TestRunOnceExamples(t *testing.T) {
	tree := t.TempDir()
	if n := copyManifests(t, examplesDir, tree); n == 0 {
		t.Fatal("no examples")
	}
	flow{
		tree:       tree,
		extra:      []string{"--data-dir", filepath.Join(t.TempDir(), "data")},
		edit:       "vllm-deployment.yaml",
		editFrom:   "vllm/vllm-openai:v0.10.1",
		editTo:     "vllm/vllm-openai:v0.10.2",
		editKey:    "ml/Deployment/chat",
		remove:     "sglang-lws.yaml",
		present:    []string{"ml/Deployment/chat", "ml/DynamoGraphDeployment/qwen-disagg", "ml/LeaderWorkerSet/reasoner"},
		absent:     []string{"default/Deployment/web"},
		historyKey: "ml/Deployment/chat",
	}.run(t)
}

// TestRunOnceCorpus runs the flow over the 45 upstream manifests and the
// examples in one tree.
func TestRunOnceCorpus(t *testing.T) {
	corpus := manifesttest.Corpus(t)
	tree := t.TempDir()
	if n := copyManifests(t, corpus, filepath.Join(tree, "upstream")); n != 45 {
		t.Fatalf("corpus %s has %d manifests, want 45", corpus, n)
	}
	copyManifests(t, examplesDir, filepath.Join(tree, "examples"))
	flow{
		tree:     tree,
		extra:    []string{"--data-dir", filepath.Join(t.TempDir(), "data")},
		edit:     "upstream/lws/docs/examples/vllm/GPU/lws.yaml",
		editFrom: "vllm/vllm-openai:v0.8.5",
		editTo:   "vllm/vllm-openai:v0.9.0",
		editKey:  "default/LeaderWorkerSet/vllm",
		remove:   "upstream/ollama/examples/kubernetes/gpu.yaml",
		present: []string{
			"default/LeaderWorkerSet/vllm",              // LWS vLLM
			"default/DynamoGraphDeployment/vllm-disagg", // Dynamo disagg
			"default/DisaggregatedSet/pd-disagg-vllm",
			"ml/DynamoGraphDeployment/qwen-disagg",
		},
		absent: []string{"default/Deployment/nginx-deployment", "default/Deployment/redis-leader", "default/Deployment/web"},
	}.run(t)
}

// TestRunOnceExternalServer runs the examples flow, history and get against a
// separate nats-server process over TCP.
func TestRunOnceExternalServer(t *testing.T) {
	url := streamtest.StartExternal(t)
	streamtest.WaitJetStream(t, url)
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	flow{
		tree:       tree,
		extra:      []string{"--nats-url", url},
		edit:       "vllm-deployment.yaml",
		editFrom:   "vllm/vllm-openai:v0.10.1",
		editTo:     "vllm/vllm-openai:v0.10.2",
		editKey:    "ml/Deployment/chat",
		remove:     "sglang-lws.yaml",
		present:    []string{"ml/Deployment/chat"},
		absent:     []string{"default/Deployment/web"},
		historyKey: "ml/Deployment/chat",
	}.run(t)
}

// checkHistory runs history and get after the edit of f.historyKey.
func checkHistory(t *testing.T, c *cli, f flow, first, second expectation, between time.Time) {
	t.Helper()
	r := c.mustRun(append([]string{"history", f.historyKey}, f.extra...)...)
	var rows []string
	for line := range strings.SplitSeq(r.stdout, "\n") {
		if len(line) > 0 && line[0] >= '0' && line[0] <= '9' {
			rows = append(rows, line)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("history %s: %d versions, want 2:\n%s", f.historyKey, len(rows), r.stdout)
	}
	for i, e := range []expectation{first, second} {
		mustContain(t, "history row", rows[i], report.Short(e.InputHash), report.Short(e.BomHash))
	}
	mustContain(t, "history", r.stdout, first.Workload.UID, "vllm@0.10.1", "vllm@0.10.2", "Qwen/Qwen2.5-1.5B-Instruct")
	if !strings.Contains(rows[0], "vllm@0.10.1") || !strings.Contains(rows[1], "vllm@0.10.2") {
		t.Errorf("history rows not oldest first:\n%s", r.stdout)
	}

	r = c.mustRun(append([]string{"get", "--at", between.UTC().Format(time.RFC3339Nano), f.historyKey}, f.extra...)...)
	if !bytes.Equal([]byte(strings.TrimSuffix(r.stdout, "\n")), first.BOM) {
		t.Errorf("get --at (between the versions) did not print the first BOM")
	}
	r = c.mustRun(append([]string{"get", f.historyKey}, f.extra...)...)
	if !bytes.Equal([]byte(strings.TrimSuffix(r.stdout, "\n")), second.BOM) {
		t.Errorf("get did not print the latest BOM")
	}
	r = c.run(append([]string{"get", "--at", "2001-01-01", f.historyKey}, f.extra...)...)
	if r.err == nil || !strings.Contains(r.err.Error(), "no BOM at") {
		t.Errorf("get before the first version: err = %v, want \"no BOM at ...\"", r.err)
	}
	for _, cmd := range []string{"history", "get"} {
		r = c.run(append([]string{cmd, "ml/Deployment/no-such-workload"}, f.extra...)...)
		if r.err == nil || !strings.Contains(r.err.Error(), "workload ml/Deployment/no-such-workload not found") {
			t.Errorf("%s of an unknown workload: err = %v, want \"... not found\"", cmd, r.err)
		}
	}
	r = c.run(append([]string{"get", "not-a-key"}, f.extra...)...)
	if r.err == nil {
		t.Errorf("get with a malformed key succeeded")
	}
}

// checkDeleted asks history and get about f.historyKey once it is deleted.
func checkDeleted(t *testing.T, c *cli, f flow) {
	t.Helper()
	r := c.run(append([]string{"get", f.historyKey}, f.extra...)...)
	if r.err == nil || !strings.Contains(r.err.Error(), "deleted at") {
		t.Errorf("get after deletion: err = %v, want \"... deleted at ...\"", r.err)
	}
	r = c.mustRun(append([]string{"history", f.historyKey}, f.extra...)...)
	mustContain(t, "history after deletion", r.stdout, "deleted")
}

// sinkState is what the file sink's journal says of the workload whose
// directory is dir (under a tree whose root is three directories up: the
// cluster, namespace, kind, name layout).
func sinkState(t *testing.T, dir string) file.State {
	t.Helper()
	root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(dir))))
	states, err := file.ReadStates(root)
	if err != nil {
		t.Errorf("state of %s: %v", dir, err)
		return file.State{}
	}
	rel, _ := filepath.Rel(root, dir)
	return states[filepath.ToSlash(rel)]
}
