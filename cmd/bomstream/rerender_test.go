package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
	"github.com/bomstream/bomstream/transformer/rerender"
)

// oldRules stands in for the rules of the build before: SGLang is defined
// so that nothing matches it.
const oldRules = `runtimes:
- name: sglang
  title: SGLang
  purl: pkg:pypi/sglang
  images: [{pattern: '^no-such-image$'}]
`

// version is what BOMS says of a workload: its current change sequence and
// BOM hash ("" for a tombstone).
type bomVersion2 struct {
	changeSeq uint64
	bomHash   string
}

// currentBOMs reads the last BOMS message of every workload of a finished
// run's store, by workload key.
func currentBOMs(t *testing.T, data string) map[string]bomVersion2 {
	t.Helper()
	b := openBus(t, data, "")
	out := map[string]bomVersion2{}
	err := b.Reader().LastPerSubject(context.Background(), schemas.StreamBOMs, schemas.SubjectBOMsPrefix+">", false, func(m *jetstream.RawStreamMsg) error {
		bm, err := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
		if err != nil {
			return err
		}
		out[wkey(bm.Workload)] = bomVersion2{bm.ChangeSeq, bm.BomHash}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	return out
}

// An upgrade: a store written with rules that miss one stack (SGLang), then
// the new build (the default rules) started on it. Only the workload that
// stack concerns gets one new version, and the Dependency-Track double
// sees one upload, of it; a third start does nothing; `rerender --dry-run`
// with the old rules lists it, and `rerender` with the new rules nothing.
func TestUpgradeRerendersOnlyWhatChanges(t *testing.T) {
	dt := dtracktest.New(t, dtracktest.Options{})
	key := dt.NewKey(dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement, dtracktest.ProjectCreationUpload)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "dt-key")
	writeFile(t, keyFile, key+"\n")
	rules := filepath.Join(dir, "old-rules.yaml")
	writeFile(t, rules, oldRules)
	sinksConf := fmt.Sprintf("sinks:\n- {name: dt, type: dependencytrack, config: {url: %q, apiKeyFile: %q, pollInterval: 50ms}}\n", dt.URL(), keyFile)
	confOld, confNew := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
	writeFile(t, confOld, sinksConf+"transformer: {rulesFile: "+rules+"}\n")
	writeFile(t, confNew, sinksConf)
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	data := filepath.Join(dir, "data")
	c := newCLI(t)

	first := c.mustRun("run", "--config", confOld, "--manifests", tree, "--once", "--data-dir", data)
	// A new store is rendered by the first transformer alone: no pass, the
	// fingerprint stored all the same.
	if strings.Contains(first.stderr, "re-rendered") {
		t.Errorf("the first run on a new store made a re-render pass:\n%s", tail(first.stderr, 3000))
	}
	b := openBus(t, data, "")
	if rec, ok, err := rerender.Stored(context.Background(), b); err != nil || !ok || rec.Fingerprint == "" {
		t.Errorf("the first run stored no fingerprint: %+v %v %v", rec, ok, err)
	}
	b.Close()
	before, upBefore := currentBOMs(t, data), dt.UploadsAll()
	if len(before) < 3 {
		t.Fatalf("the first run exported %d BOMs: %v", len(before), before)
	}

	r := c.mustRun("run", "--config", confNew, "--manifests", tree, "--once", "--data-dir", data)
	after, upAfter := currentBOMs(t, data), dt.UploadsAll()
	const affected = "ml/LeaderWorkerSet/reasoner"
	if _, ok := after[affected]; !ok {
		t.Fatalf("%s has no BOM after the upgrade: %v", affected, after)
	}
	for k, v := range after {
		old, had := before[k]
		switch {
		case k == affected && (v.bomHash == "" || had && (v.changeSeq == old.changeSeq || v.bomHash == old.bomHash)):
			t.Errorf("%s: before %+v, after %+v: want one new BOM", k, old, v)
		case k != affected && v != old:
			t.Errorf("%s: before %+v, after %+v: want no new version", k, old, v)
		}
	}
	for h, n := range upAfter {
		if n != upBefore[h] && h != after[affected].bomHash {
			t.Errorf("Dependency-Track got %d uploads of %s, not the affected workload's BOM", n-upBefore[h], h)
		}
	}
	if upAfter[after[affected].bomHash]-upBefore[after[affected].bomHash] != 1 {
		t.Errorf("uploads of the new BOM of %s: %d, want 1\n%s", affected, upAfter[after[affected].bomHash], tail(r.stderr, 3000))
	}

	// Started again with the same build: nothing to re-render.
	c.mustRun("run", "--config", confNew, "--manifests", tree, "--once", "--data-dir", data)
	if again := currentBOMs(t, data); fmt.Sprint(again) != fmt.Sprint(after) {
		t.Errorf("a third start changed BOMS: %v -> %v", after, again)
	}
	dry := c.mustRun("rerender", "--dry-run", "--config", confOld, "--data-dir", data)
	mustContain(t, "rerender --dry-run with the old rules", dry.stdout, affected, "would change", "1 changed", "dry run: nothing published")
	if n := strings.Count(dry.stdout, "would change"); n != 1 {
		t.Errorf("dry run lists %d workloads:\n%s", n, dry.stdout)
	}
	none := c.mustRun("rerender", "--config", confNew, "--data-dir", data)
	mustContain(t, "rerender with the new rules", none.stdout, "0 changed")
	if fmt.Sprint(currentBOMs(t, data)) != fmt.Sprint(after) {
		t.Error("rerender with nothing to change changed BOMS")
	}
}

// With a running owner of the data directory, `rerender` asks it: the pass
// is made with the owner's transformer (here the new rules, whatever the
// command's configuration says), which re-rendered the store when it
// started.
func TestRerenderThroughOwner(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "old-rules.yaml")
	writeFile(t, rules, oldRules)
	confOld := filepath.Join(dir, "old.yaml")
	writeFile(t, confOld, "transformer: {rulesFile: "+rules+"}\n")
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	data, sinkDir := filepath.Join(dir, "data"), filepath.Join(dir, "boms")
	c := newCLI(t)
	c.mustRun("run", "--config", confOld, "--manifests", tree, "--once", "--data-dir", data, "--sink-dir", sinkDir)
	if r := c.mustRun("history", "ml/LeaderWorkerSet/reasoner", "--data-dir", data); strings.Contains(r.stdout, "sglang") {
		t.Fatalf("the old rules found SGLang:\n%s", r.stdout)
	}

	stop := startRun(t, c, "--manifests", tree, "--interval", "200ms", "--data-dir", data, "--sink-dir", sinkDir)
	eventually(t, "run owns the data directory", func() bool {
		_, err := os.Stat(filepath.Join(data, "owner.json"))
		return err == nil
	})
	eventually(t, "the owner re-rendered the store", func() bool {
		h := c.run("history", "ml/LeaderWorkerSet/reasoner", "--data-dir", data)
		return h.err == nil && strings.Contains(h.stdout, "sglang")
	})
	var r result
	eventually(t, "a pass through the owner with nothing left to change", func() bool {
		r = c.run("rerender", "--dry-run", "--config", confOld, "--data-dir", data)
		return r.err == nil && strings.Contains(r.stdout, "0 changed, 5 unchanged")
	})
	if strings.Contains(r.stdout, "no process runs the transformer") {
		t.Errorf("the command did not go through the owner:\n%s", r.stdout)
	}
	if res := stop(); res.err != nil {
		t.Fatalf("run: %v\n%s", res.err, tail(res.stderr, 3000))
	}
}
