package main

// Version identity, black-box through the CLI (issue "Delivery core",
// defects 1-3): a version is (cluster, uid, change sequence), not the BOM's
// bytes, and a workload that stops serving loses its current AI-BOM.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const chatVLLM = `apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai:%TAG%
        args: [--model, Qwen/Qwen2.5-1.5B-Instruct]
`

const chatNginx = `apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: server
        image: nginx:1.27
`

// versionsEnv is a manifest directory, a data directory and a sink
// directory for runs of `bomstream run --manifests --once`.
type versionsEnv struct {
	t                       *testing.T
	c                       *cli
	manifests, data, sink   string
	manifest                string
	workloadDir, latestPath string
}

func newVersionsEnv(t *testing.T) *versionsEnv {
	dir := t.TempDir()
	v := &versionsEnv{t: t, c: newCLI(t), manifests: filepath.Join(dir, "m"), data: filepath.Join(dir, "data"), sink: filepath.Join(dir, "boms")}
	if err := os.MkdirAll(v.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	v.manifest = filepath.Join(v.manifests, "chat.yaml")
	// A second workload, so that deleting chat is not more than half of the
	// directory's workloads (which the source holds back until confirmed).
	writeFile(t, filepath.Join(v.manifests, "other.yaml"), strings.NewReplacer("name: chat", "name: other").Replace(vllm("v0.9.0")))
	v.workloadDir = filepath.Join(v.sink, "default", "ml", "Deployment", "chat")
	v.latestPath = filepath.Join(v.workloadDir, "latest.cdx.json")
	return v
}

// write puts doc in the manifest file with modification time at (the
// observation time of manifests, which the BOM's timestamp shows): the same
// document at the same time renders the same bytes.
func (v *versionsEnv) write(doc string, at time.Time) {
	v.t.Helper()
	writeFile(v.t, v.manifest, doc)
	if err := os.Chtimes(v.manifest, at, at); err != nil {
		v.t.Fatal(err)
	}
}

var (
	t1 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	t3 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
)

func (v *versionsEnv) runOnce() result {
	v.t.Helper()
	return v.c.mustRun("run", "--manifests", v.manifests, "--once", "--data-dir", v.data, "--sink-dir", v.sink)
}

func (v *versionsEnv) cmd(args ...string) result {
	v.t.Helper()
	return v.c.run(append(args, "--data-dir", v.data)...)
}

func vllm(tag string) string { return strings.Replace(chatVLLM, "%TAG%", tag, 1) }

// Defect 1: replacing the vLLM container by nginx must retire the workload's
// AI-BOM everywhere: the sink's latest file, `get` and `history`.
func TestStopServingRetiresTheBOM(t *testing.T) {
	v := newVersionsEnv(t)
	v.write(vllm("v0.10.1"), t1)
	v.runOnce()
	if _, err := os.Stat(v.latestPath); err != nil {
		t.Fatalf("first run: %v", err)
	}
	v.write(chatNginx, t2)
	r := v.runOnce()
	if _, err := os.Stat(v.latestPath); !os.IsNotExist(err) {
		b, _ := os.ReadFile(v.latestPath)
		t.Fatalf("after the workload stopped serving, %s still says %.80s... (stat: %v)\n%s", v.latestPath, b, err, r.stdout)
	}
	mustContain(t, "run summary", r.stdout, "sink file: 0 exported, 1 tombstones")
	g := v.cmd("get", "ml/Deployment/chat")
	if g.err == nil || !strings.Contains(g.err.Error(), "not serving") {
		t.Fatalf("get after stop serving: err %v, stdout %.200s", g.err, g.stdout)
	}
	h := v.cmd("history", "ml/Deployment/chat")
	if h.err != nil {
		t.Fatal(h.err)
	}
	lines := strings.Split(strings.TrimSpace(h.stdout), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "not serving") {
		t.Fatalf("history's last line %q does not say not serving:\n%s", last, h.stdout)
	}
	// Serving again brings it back.
	v.write(vllm("v0.10.1"), t3)
	r = v.runOnce()
	mustContain(t, "run summary", r.stdout, "sink file: 1 exported")
	if _, err := os.Stat(v.latestPath); err != nil {
		t.Fatalf("serving again: %v", err)
	}
}

// Defect 2: a workload deleted and re-created identically is exported again,
// and the sink no longer holds it as deleted.
func TestRevivalAfterDeleteIsExported(t *testing.T) {
	v := newVersionsEnv(t)
	v.write(vllm("v0.10.1"), t1)
	v.runOnce()
	first, err := os.ReadFile(v.latestPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(v.manifest); err != nil {
		t.Fatal(err)
	}
	r := v.runOnce()
	mustContain(t, "run summary after delete", r.stdout, "1 tombstones")
	if _, err := os.Stat(v.latestPath); !os.IsNotExist(err) {
		t.Fatalf("a deleted workload still has %s (stat: %v)", v.latestPath, err)
	}
	v.write(vllm("v0.10.1"), t1)
	r = v.runOnce()
	mustContain(t, "run summary after re-create", r.stdout, "sink file: 1 exported")
	again, err := os.ReadFile(v.latestPath)
	if err != nil {
		t.Fatalf("re-created workload: %v", err)
	}
	if string(again) != string(first) {
		t.Fatal("the re-created workload's BOM differs from the first")
	}
	g := v.cmd("get", "ml/Deployment/chat")
	if g.err != nil || strings.TrimSpace(g.stdout) != strings.TrimSpace(string(first)) {
		t.Fatalf("get after re-create: %v\n%.200s", g.err, g.stdout)
	}
}

// Defect 3 (first half): A -> B -> A is three versions; the third is
// exported although its bytes equal the first's, and it is the latest.
func TestABAIsThreeVersions(t *testing.T) {
	v := newVersionsEnv(t)
	v.write(vllm("v0.10.1"), t1)
	v.runOnce()
	a, err := os.ReadFile(v.latestPath)
	if err != nil {
		t.Fatal(err)
	}
	v.write(vllm("v0.11.0"), t2)
	v.runOnce()
	v.write(vllm("v0.10.1"), t1)
	r := v.runOnce()
	mustContain(t, "third run", r.stdout, "sink file: 1 exported")
	got, err := os.ReadFile(v.latestPath)
	if err != nil || string(got) != string(a) {
		t.Fatalf("latest after A -> B -> A is not A (%v)", err)
	}
	h := v.cmd("history", "ml/Deployment/chat")
	if h.err != nil {
		t.Fatal(h.err)
	}
	if n := strings.Count(h.stdout, "vllm@"); n != 3 {
		t.Fatalf("history shows %d vLLM versions, want 3:\n%s", n, h.stdout)
	}
	// The file sink stores two distinct documents: identical bytes once.
	files, err := filepath.Glob(filepath.Join(v.workloadDir, "*"+".cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	immutable := 0
	for _, f := range files {
		if filepath.Base(f) != "latest.cdx.json" {
			immutable++
		}
	}
	if immutable != 2 {
		t.Fatalf("%d immutable BOM files, want 2: %v", immutable, files)
	}
}

// Defect 9: --nats-listen on a non-loopback address served an
// unauthenticated JetStream. It is refused with a message saying what to do,
// before anything is created.
func TestNonLoopbackListenWithoutCredentialsIsRefused(t *testing.T) {
	v := newVersionsEnv(t)
	v.write(vllm("v0.10.1"), t1)
	r := v.c.run("run", "--manifests", v.manifests, "--once", "--data-dir", v.data, "--sink-dir", v.sink, "--nats-listen", "0.0.0.0:0")
	if r.err == nil || !strings.Contains(r.err.Error(), "not a loopback address") || !strings.Contains(r.err.Error(), "BOMSTREAM_NATS_LISTEN_TOKEN") {
		t.Fatalf("got %v", r.err)
	}
	if _, err := os.Stat(v.data); !os.IsNotExist(err) {
		t.Fatalf("the refused run created %s (%v)", v.data, err)
	}
	v.c.vars["BOMSTREAM_NATS_LISTEN_TOKEN"] = "s3cr3t-token-value"
	r = v.c.mustRun("run", "--manifests", v.manifests, "--once", "--data-dir", v.data, "--sink-dir", v.sink, "--nats-listen", "0.0.0.0:0")
	if strings.Contains(r.stdout+r.stderr, "s3cr3t-token-value") {
		t.Fatal("the listener token reached the output")
	}
}
