package main

// Bounded inputs, black-box through the CLI (issue "The store survives its
// users", build item 5): what a manifest directory holds cannot hang
// `render` or `run`, exhaust memory, or make an event or a BOM too large for
// the stream.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// servingVLLM is a workload that gets a BOM, next to the files that must be
// skipped.
const servingVLLM = `apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai:v0.10.1
        args: [--model, Qwen/Qwen3-0.6B]
`

// heapLimit is what a guarded command may hold in heap: a reader stuck on
// /dev/zero grows without end.
const heapLimit = 1 << 30

// guarded runs one command with a watchdog. A command stuck opening a named
// pipe or reading /dev/zero cannot be stopped from the outside, and the
// goroutine would keep eating memory while the other tests run: past the
// deadline, or past heapLimit of live heap, the watchdog ends the test binary
// with a panic that says which.
func guarded(t *testing.T, deadline time.Duration, what string, f func() result) result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- f() }()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(deadline)
	for {
		select {
		case r := <-done:
			return r
		case <-timeout:
			metrics.Read(sample)
			panic(fmt.Sprintf("%s: %s has not returned after %s, holding %d MiB of heap (stuck on a named pipe or an endless device?)",
				t.Name(), what, deadline, sample[0].Value.Uint64()>>20))
		case <-tick.C:
			metrics.Read(sample)
			if heap := sample[0].Value.Uint64(); heap > heapLimit {
				panic(fmt.Sprintf("%s: %s holds %d MiB of heap (reading a device with no end?)", t.Name(), what, heap>>20))
			}
		}
	}
}

// A manifest over the size limit is skipped with a note, without being
// read: rendering the directory allocates far less than the file's size.
// Both the default limit (16 MiB) and --max-file-bytes apply.
func TestRenderSkipsOversizedFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "chat.yaml"), servingVLLM)
	big := filepath.Join(dir, "comments.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	line := "# " + strings.Repeat("a comment, ", 9) + "\n"
	block := strings.Repeat(line, (1<<20)/len(line))
	for range 64 { // 64 MiB
		if _, err := f.WriteString(block); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(allocs)
	before := allocs[0].Value.Uint64()
	r := guarded(t, waitFor, "render -f "+dir, func() result { return c.run("render", "-f", dir) })
	metrics.Read(allocs)
	allocated := allocs[0].Value.Uint64() - before
	if r.err != nil {
		t.Fatalf("render: %v\n%s", r.err, r.stderr)
	}
	mustContain(t, "render's stderr", r.stderr, "skipped: "+big+": ", "over the limit of 16 MiB", "1 workloads, 1 BOMs")
	if allocated > 32<<20 {
		t.Errorf("render allocated %d MiB for a directory whose only big file is skipped", allocated>>20)
	}

	// A smaller limit, as a flag.
	small := filepath.Join(dir, "chat.yaml")
	r = c.run("render", "-f", small, "--max-file-bytes", "100")
	if r.err != nil {
		t.Fatalf("render --max-file-bytes: %v\n%s", r.err, r.stderr)
	}
	mustContain(t, "render's stderr", r.stderr, "skipped: "+small+": ", "over the limit of 100 bytes", "0 workloads, 0 BOMs")
	r = c.run("render", "-f", small, "--max-file-bytes", "-1")
	if r.err == nil || !strings.Contains(r.err.Error(), "--max-file-bytes") {
		t.Errorf("render --max-file-bytes -1: err = %v", r.err)
	}
}

// The limits are configuration: manifests.maxFileBytes and
// manifests.maxDocuments reach the manifest source of `run`, and invalid
// values are refused naming the key.
func TestRunManifestLimitsFromConfig(t *testing.T) {
	dir := t.TempDir()
	manifests, sink, data := filepath.Join(dir, "m"), filepath.Join(dir, "boms"), filepath.Join(dir, "data")
	writeFile(t, filepath.Join(manifests, "chat.yaml"), servingVLLM)
	many := filepath.Join(manifests, "many.yaml")
	writeFile(t, many, strings.Replace(servingVLLM, "name: chat", "name: first", 1)+"---\n"+
		strings.Replace(servingVLLM, "name: chat", "name: second", 1))
	cfg := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, cfg, "manifests:\n  maxFileBytes: 4096\n  maxDocuments: 1\n")
	c := newCLI(t)
	r := c.mustRun("run", "--config", cfg, "--manifests", manifests, "--once", "--data-dir", data, "--sink-dir", sink)
	mustContain(t, "run's log", r.stderr, many, "more than 1 documents")
	mustContain(t, "run summary", r.stdout, "2 workloads read", "sink file: 2 exported")

	writeFile(t, cfg, "manifests:\n  maxFileBytes: -1\n  maxDocuments: -5\n")
	r = c.run("run", "--config", cfg, "--manifests", manifests, "--once", "--data-dir", data, "--sink-dir", sink)
	if r.err == nil {
		t.Fatal("negative limits accepted")
	}
	mustContain(t, "error", r.err.Error(), "manifests.maxFileBytes", "manifests.maxDocuments")
}

// A file that outgrows the size limit is skipped, and its workloads are not
// taken for deleted: no tombstone, the sink keeps their BOM.
func TestRunOnceKeepsWorkloadsOfSkippedFile(t *testing.T) {
	dir := t.TempDir()
	manifests, sink, data := filepath.Join(dir, "m"), filepath.Join(dir, "boms"), filepath.Join(dir, "data")
	chat := filepath.Join(manifests, "chat.yaml")
	writeFile(t, chat, servingVLLM)
	cfg := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, cfg, "manifests:\n  maxFileBytes: 1024\n")
	c := newCLI(t)
	run := func() result {
		return c.mustRun("run", "--config", cfg, "--manifests", manifests, "--once", "--data-dir", data, "--sink-dir", sink)
	}
	r := run()
	mustContain(t, "first run", r.stdout, "sink file: 1 exported")
	writeFile(t, chat, servingVLLM+"# "+strings.Repeat("padding ", 200)+"\n")
	r = run()
	mustContain(t, "run's log", r.stderr, chat, "over the limit of 1 KiB")
	mustContain(t, "second run", r.stdout, "0 new events, 0 tombstones", "sink file: 0 exported, 0 tombstones")
	if _, err := os.Stat(filepath.Join(sink, "default", "ml", "Deployment", "chat", "latest.cdx.json")); err != nil {
		t.Errorf("the BOM of a workload whose file was skipped is gone: %v", err)
	}
}
