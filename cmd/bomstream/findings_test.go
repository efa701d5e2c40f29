package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// Through the whole pipeline (manifests, transformer, BOMS, the findings
// stage on the embedded server): a finding opened by one version of a
// workload is resolved by the next, and re-evaluating BOMS twice writes
// no finding again.
func TestFindingsThroughThePipeline(t *testing.T) {
	c := newCLI(t)
	dir, data := t.TempDir(), t.TempDir()
	manifest := filepath.Join(dir, "chat.yaml")
	src, err := os.ReadFile("../../examples/vllm-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, manifest, strings.Replace(string(src), "        - --revision=989aa7980e4cf806f80c7fef2b1adb7bc71aa306\n", "", 1))
	runOnce := func() {
		c.mustRun("run", "--manifests", dir, "--once", "--data-dir", data, "--sink-dir", filepath.Join(dir, "..", "boms-"+filepath.Base(data)))
	}
	list := func(args ...string) []schemas.FindingEvent {
		t.Helper()
		r := c.mustRun(append([]string{"findings", "list", "--data-dir", data, "-o", "json"}, args...)...)
		var out []schemas.FindingEvent
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("findings list: %v\n%s", err, r.stdout)
		}
		return out
	}
	has := func(fs []schemas.FindingEvent, rule, state string) bool {
		for _, f := range fs {
			if f.Rule == rule && f.State == state && f.Workload.Key() == "ml/Deployment/chat" {
				return true
			}
		}
		return false
	}

	runOnce()
	if cs := consumersOf(t, data, schemas.StreamBOMs); slices.Contains(cs, schemas.StageFindings) {
		t.Errorf("run made a consumer of BOMS for the findings (%v): they follow its transformer", cs)
	}
	open := list()
	for _, rule := range []string{"model-unpinned", "image-digest", "model-license"} {
		if !has(open, rule, schemas.FindingOpened) {
			t.Errorf("no open %s finding after v1: %+v", rule, open)
		}
	}
	if has(open, "runtime-version", schemas.FindingOpened) || has(open, "model-source", schemas.FindingOpened) {
		t.Errorf("vllm 0.10.1 serving Qwen broke a rule: %+v", open)
	}
	if got := list("--rule", "model-unpinned", "--severity", "medium", "--namespace", "ml"); len(got) != 1 {
		t.Errorf("filtered list: %+v", got)
	}
	table := c.mustRun("findings", "list", "--data-dir", data).stdout
	mustContain(t, "findings table", table, "WORKLOAD", "default/ml/Deployment/chat", "model-unpinned", "3 findings")
	csv := c.mustRun("findings", "list", "--data-dir", data, "-o", "csv", "--rule", "image-digest").stdout
	mustContain(t, "findings csv", csv, "cluster,namespace,kind,name,rule", "default,ml,Deployment,chat,image-digest,low,opened")

	found := c.mustRun("find", "--findings", "--data-dir", data, "-o", "json").stdout
	mustContain(t, "find --findings", found, `"name": "chat"`, `"findings"`, `"rule": "model-unpinned"`)

	writeFile(t, manifest, string(src)) // the revision pinned again
	runOnce()
	resolved := list("--state", "resolved")
	if len(resolved) != 1 || !has(resolved, "model-unpinned", schemas.FindingResolved) || resolved[0].Reason != schemas.FindingFixed {
		t.Errorf("after v2, resolved: %+v", resolved)
	}
	if open := list(); len(open) != 2 {
		t.Errorf("after v2, open: %+v", open)
	}

	// One finding set per version of the workload (v1 opened three, v2
	// resolved one), and the replays write none.
	before := countFindingMessages(t, data)
	for range 2 {
		out := c.mustRun("findings", "replay", "--data-dir", data).stdout
		mustContain(t, "findings replay", out, "1 older versions skipped, 0 opened, 0 resolved")
	}
	if after := countFindingMessages(t, data); after != before || before != 2 {
		t.Errorf("FINDINGS messages: %d before the replays, %d after (want 2 and 2)", before, after)
	}
}

func consumersOf(t *testing.T, data, streamName string) []string {
	t.Helper()
	bus := openBus(t, data, "")
	defer bus.Close()
	cs, err := bus.Durables().List(context.Background(), streamName)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

func countFindingMessages(t *testing.T, data string) int {
	t.Helper()
	bus := openBus(t, data, "")
	defer bus.Close()
	n := 0
	err := bus.Reader().Messages(context.Background(), schemas.StreamFindings, "", 0, func(*jetstream.RawStreamMsg) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A broken rules file stops the process before anything starts, naming the
// file, the rule and the field.
func TestFindingsBadRulesFile(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	writeFile(t, rules, "rules:\n  - id: old-vllm\n    check: runtime-version\n    severity: high\n    minimum: {vllm: newest}\n")
	c.vars["BOMSTREAM_FINDINGS_RULES"] = rules
	r := c.run("run", "--manifests", dir, "--once", "--data-dir", filepath.Join(dir, "data"))
	if r.err == nil {
		t.Fatal("run started with a broken rules file")
	}
	mustContain(t, "the error", r.err.Error(), "findings.rulesFile", rules, `rule "old-vllm"`, "field minimum.vllm", `"vllm<newest"`)
	if r := c.run("findings", "list", "--state", "shut"); r.err == nil || !strings.Contains(r.err.Error(), `state: "shut"`) {
		t.Errorf("a bad --state: %v", r.err)
	}
}
