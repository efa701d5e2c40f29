package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWebPages: `run` serves the web pages beside the API, with where its
// own sinks hold each version; `web`, attached to the same data directory
// through the running owner, serves the same pages, with the sinks built
// from the configuration only to locate (here the default file sink, in
// ./boms: the owner's --sink-dir is its own flag).
func TestWebPages(t *testing.T) {
	dir := t.TempDir()
	data, boms := filepath.Join(dir, "data"), filepath.Join(dir, "boms")
	m := filepath.Join(dir, "m")
	copyManifests(t, "testdata/inventory", m)
	c := newCLI(t)
	c.mustRun("run", "--manifests", m, "--once", "--data-dir", data, "--sink-dir", boms)
	page := func(addr, path string) string {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s\n%.500s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		return string(b)
	}
	owner, stop := startServing(t, "run", "--manifests", m, "--data-dir", data, "--sink-dir", boms, "--api-listen", "127.0.0.1:0")
	defer stop()
	attached, stopWeb := startServing(t, "web", "--data-dir", data, "--api-listen", "127.0.0.1:0")
	defer stopWeb()
	for _, addr := range []string{owner, attached} {
		inv := page(addr, "/?runtime=vllm%3C0.8.5")
		mustContain(t, "inventory page", inv, "old-vllm", "vllm 0.8.4", "Workloads 1–1 of 1")
		wl := page(addr, "/workloads/default/ml/Deployment/old-vllm")
		mustContain(t, "workload page", wl, "Timeline", "first seen", "meta-llama/Llama-3.1-70B-Instruct",
			"Where the sinks hold", "latest file, exported", filepath.Join("default", "ml", "Deployment", "old-vllm", "latest.cdx.json"))
		mustContain(t, "fleet page", page(addr, "/fleet"), "Workloads by runtime and version", "<svg")
		mustContain(t, "findings page", page(addr, "/findings"), "Findings")
	}

	// A workload added while both serve shows on both, the fleet's
	// figures included (they are kept until the index moves).
	before := page(attached, "/fleet")
	writeFile(t, filepath.Join(m, "added.yaml"), `apiVersion: apps/v1
kind: Deployment
metadata: {name: added-later, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: main
        image: vllm/vllm-openai:v0.9.9
        command: ["vllm", "serve"]
        args: ["webtest/added-later-model"]
`)
	for _, addr := range []string{owner, attached} {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(page(addr, "/fleet"), "webtest/added-later-model") {
			if time.Now().After(deadline) {
				t.Fatalf("the fleet page of %s never showed the added workload", addr)
			}
			time.Sleep(200 * time.Millisecond)
		}
		mustContain(t, "inventory page", page(addr, "/?model=webtest%2Fadded-later-model"), "added-later", "vllm 0.9.9")
		// Its findings (an unpinned model) reach the pages' findings index.
		for !strings.Contains(page(addr, "/findings?namespace=ml&rule=model-unpinned"), "/ml/Deployment/added-later") {
			if time.Now().After(deadline) {
				t.Fatalf("the findings page of %s never listed the added workload's finding", addr)
			}
			time.Sleep(200 * time.Millisecond)
		}
		mustContain(t, "inventory page with findings only", page(addr, "/?findings=true&model=webtest%2Fadded-later-model"), "added-later", "Workloads 1–1 of 1")
	}
	if strings.Contains(before, "webtest/added-later-model") {
		t.Fatal("the workload was on the fleet page before it was added")
	}
}
