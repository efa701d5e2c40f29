package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas/validate"
	"github.com/bomstream/bomstream/sinks/registry"
)

func testEnv(stdout, stderr *bytes.Buffer) *env {
	return &env{stdout: stdout, stderr: stderr, getenv: func(string) string { return "" }, sinks: registry.Builtin()}
}

func TestRenderExamplesToStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"render", "-f", "../../examples"}, testEnv(&out, &errOut)); err != nil {
		t.Fatalf("render: %v\n%s", err, errOut.String())
	}
	v, err := validate.CycloneDX()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var names []string
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		if err := v.ValidateBOM(raw); err != nil {
			t.Fatalf("bom does not validate: %v", err)
		}
		var doc struct {
			Metadata struct{ Component struct{ Name string } }
		}
		_ = json.Unmarshal(raw, &doc)
		names = append(names, doc.Metadata.Component.Name)
	}
	got := strings.Join(names, ",")
	for _, want := range []string{"chat", "qwen-disagg", "reasoner", "summarizer"} {
		if !strings.Contains(got, want) {
			t.Errorf("no BOM for %s among %s", want, got)
		}
	}
	if strings.Contains(got, "web") {
		t.Errorf("nginx got a BOM: %s", got)
	}
	summary := errOut.String()
	for _, want := range []string{"LeaderWorkerSet/reasoner", "sglang@0.5.2 (declared)", "Deployment/web", "no BOM", "note: ", "Service/chat"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

func TestRenderToDirectoryAndBadInput(t *testing.T) {
	in := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(in, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: tgi, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:3.0.1
        env:
        - {name: MODEL_ID, value: mistralai/Mistral-7B-Instruct-v0.3}
        - {name: NUM_SHARD, value: 2}
        - {name: HF_TOKEN, value: hf_abcdefghijklmnopqrstuvwxyz0123}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: thing}
`)
	write("broken.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: [unclosed\n")
	write("badimage.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: odd}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: "UPPER/Case:::bad"
        command: [vllm, serve, Qwen/Qwen3-0.6B]
`)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"render", "-f", in, "-o", out}, testEnv(&stdout, &stderr))
	if err == nil || !strings.Contains(err.Error(), "broken.yaml:4") {
		t.Fatalf("want an error naming broken.yaml:4, got %v", err)
	}
	if !strings.Contains(stderr.String(), "unknown kind") || !strings.Contains(stderr.String(), "Gadget/thing") {
		t.Errorf("unknown kind not noted:\n%s", stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.cdx.json"))
	if len(files) != 2 {
		t.Fatalf("want BOMs for tgi and odd despite the broken file, got %v\n%s", files, stdout.String())
	}
	all := ""
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all += string(b)
	}
	if strings.Contains(all, "hf_abcdefghijklmnopqrstuvwxyz0123") {
		t.Fatal("a token reached a BOM")
	}
	for _, want := range []string{"mistralai/Mistral-7B-Instruct-v0.3", "unresolved", "Qwen/Qwen3-0.6B"} {
		if !strings.Contains(all, want) {
			t.Errorf("BOMs lack %q", want)
		}
	}
	if !strings.Contains(stdout.String(), "Deployment/tgi") {
		t.Errorf("no summary line for tgi:\n%s", stdout.String())
	}
}
