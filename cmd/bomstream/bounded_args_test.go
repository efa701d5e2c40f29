package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// hugeArgs is a vLLM Deployment whose args are n flags of about 80 bytes
// after the model: 70,000 of them make 5.6 MB.
func hugeArgs(n int) string {
	var b strings.Builder
	b.WriteString(`apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai:v0.10.1
        args:
        - --model
        - Qwen/Qwen3-0.6B
`)
	for i := range n {
		fmt.Fprintf(&b, "        - --enable-feature-%06d-%s\n", i, strings.Repeat("x", 60))
	}
	return b.String()
}

// A Deployment with 5.6 MB of args is one event and one BOM: the args are
// cut before they enter the inputs, the BOM says so on the container (with
// the hash of the whole), and the model named first is still found.
func TestRunOnceHugeArgs(t *testing.T) {
	dir := t.TempDir()
	manifests, sink, data := filepath.Join(dir, "m"), filepath.Join(dir, "boms"), filepath.Join(dir, "data")
	doc := hugeArgs(70000)
	if len(doc) < 5_600_000 {
		t.Fatalf("manifest is %d bytes", len(doc))
	}
	writeFile(t, filepath.Join(manifests, "big.yaml"), doc)
	c := newCLI(t)
	r := c.mustRun("run", "--manifests", manifests, "--once", "--data-dir", data, "--sink-dir", sink)
	mustContain(t, "run summary", r.stdout, "ml/Deployment/big", "Qwen/Qwen3-0.6B", "sink file: 1 exported, 0 tombstones, 0 already exported, 0 dead-lettered")

	bus := openBus(t, data, "")
	count := func(streamName string) (n int, largest int) {
		err := bus.Reader().Messages(context.Background(), streamName, "", 0, func(m *jetstream.RawStreamMsg) error {
			n++
			largest = max(largest, len(m.Data))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, largest
	}
	if n, size := count(schemas.StreamChanges); n != 1 {
		t.Errorf("CHANGES holds %d events, want 1", n)
	} else {
		t.Logf("the event is %d bytes", size)
	}
	if n, size := count(schemas.StreamBOMs); n != 1 {
		t.Errorf("BOMS holds %d messages, want 1", n)
	} else {
		t.Logf("the BOM is %d bytes", size)
	}
	if n := countBOMFiles(t, sink); n != 1 {
		t.Fatalf("sink holds %d BOMs, want 1", n)
	}
	b, err := os.ReadFile(filepath.Join(sink, "default", "ml", "Deployment", "big", "latest.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		Components []struct {
			Type, Name string
			Properties []struct{ Name, Value string }
		}
	}
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatal(err)
	}
	var model, marked bool
	for _, comp := range bom.Components {
		if comp.Type == "machine-learning-model" && comp.Name == "Qwen/Qwen3-0.6B" {
			model = true
		}
		if comp.Type != "container" {
			continue
		}
		for _, p := range comp.Properties {
			if p.Name == "bomstream:truncated" {
				marked = true
				t.Logf("%s: %s", p.Name, p.Value)
				mustContain(t, "the truncation property", p.Value, "spec.template.spec.containers[0].args", "of 70002 items", "sha256:")
			}
		}
	}
	if !model {
		t.Error("the model named before the cut is not in the BOM")
	}
	if !marked {
		t.Errorf("no bomstream:truncated property on the container:\n%.3000s", b)
	}
}
