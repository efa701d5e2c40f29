package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWatchMode runs the pipeline in watch mode with the HTTP endpoint, adds,
// edits and deletes a manifest, then stops it as SIGTERM would.
func TestWatchMode(t *testing.T) {
	tree := t.TempDir()
	// A workload with no BOM to start with.
	b, err := os.ReadFile(filepath.Join(examplesDir, "web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree, "web.yaml"), string(b))
	sinkDir, dataDir := filepath.Join(t.TempDir(), "boms"), filepath.Join(t.TempDir(), "data")

	c := newCLI(t)
	c.httpAddr = make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		done <- c.runCtx(ctx, "run", "--manifests", tree, "--interval", "100ms", "--data-dir", dataDir,
			"--sink-dir", sinkDir, "--http-listen", "127.0.0.1:0")
	}()
	var base string
	select {
	case addr := <-c.httpAddr:
		base = "http://" + addr
	case r := <-done:
		t.Fatalf("run ended before listening: %v\n%s", r.err, tail(r.stderr, 4000))
	case <-time.After(waitFor):
		t.Fatalf("no HTTP address within %s", waitFor)
	}
	if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	eventually(t, "/readyz to answer 200", func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == http.StatusOK
	})

	// Add a serving manifest: its BOM appears.
	b, err = os.ReadFile(filepath.Join(examplesDir, "vllm-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree, "chat.yaml"), string(b))
	v1 := serving(expect(t, tree, "default"))["ml/Deployment/chat"]
	if v1.BomHash == "" {
		t.Fatal("no expected BOM for ml/Deployment/chat")
	}
	exists := func(rel string) func() bool {
		return func() bool { _, err := os.Stat(filepath.Join(sinkDir, rel)); return err == nil }
	}
	eventually(t, "the added workload's BOM", exists(bomFilePath(v1.Workload, v1.BomHash)))

	// The sink counts an export once its ledger has it, just after the file
	// is written: poll.
	eventually(t, "/metrics to count the render and the export", func() bool {
		code, m := httpGet(t, base+"/metrics")
		return code == http.StatusOK && strings.Contains(m, "bomstream_transformer_rendered_total 1\n") &&
			strings.Contains(m, `bomstream_sink_exported_total{sink="file"} 1`+"\n")
	})

	// Edit it: a second version.
	replaceIn(t, filepath.Join(tree, "chat.yaml"), "vllm/vllm-openai:v0.10.1", "vllm/vllm-openai:v0.11.0")
	v2 := serving(expect(t, tree, "default"))["ml/Deployment/chat"]
	if v2.BomHash == v1.BomHash {
		t.Fatal("the edit did not change the expected BOM")
	}
	eventually(t, "the edited workload's new BOM", exists(bomFilePath(v2.Workload, v2.BomHash)))
	if files := bomFiles(t, sinkDir)[workloadDir(v1.Workload)]; len(files) != 2 {
		t.Errorf("after the edit the workload has BOM files %v, want 2", files)
	}

	// Delete it: a tombstone.
	if err := os.Remove(filepath.Join(tree, "chat.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted workload's tombstone", func() bool {
		b, err := os.ReadFile(filepath.Join(sinkDir, workloadDir(v1.Workload), "tombstone.json"))
		return err == nil && strings.Contains(string(b), `"reason":"deleted"`)
	})
	if code, _ := httpGet(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz while running: %d", code)
	}

	// Cancel, as SIGTERM does through signal.NotifyContext: a clean exit.
	cancel()
	select {
	case r := <-done:
		if r.err != nil {
			t.Errorf("run after cancel: %v\n%s", r.err, tail(r.stderr, 4000))
		}
	case <-time.After(waitFor):
		t.Fatalf("run did not return within %s of the cancel", waitFor)
	}
	if _, err := os.Stat(filepath.Join(sinkDir, workloadDir(v1.Workload), "..", "web")); !os.IsNotExist(err) {
		t.Errorf("the non-serving workload got a directory in the sink (stat: %v)", err)
	}
}
