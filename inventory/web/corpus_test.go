package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The inventory the browser tests read: the project's corpus (the
// examples, the transformer's manifests, the planted-credentials corpus),
// 10,000 generated workloads, and one workload whose history holds an
// edit, a deletion and a revival, each pass a real `run --once`.

// generated is the number of generated workloads; genRuntimes and
// genModels what they serve, by i%4 and i/4%4, with versions and names no
// other manifest of the corpus uses, so that counts are exact.
const generated = 10000

var (
	genRuntimes = []struct{ image, command, flag, version string }{
		{"vllm/vllm-openai:v0.7.71", `["vllm", "serve"]`, "", "0.7.71"},
		{"vllm/vllm-openai:v0.7.93", `["vllm", "serve"]`, "", "0.7.93"},
		{"lmsysorg/sglang:v0.3.97", `["python3", "-m", "sglang.launch_server"]`, "--model-path", "0.3.97"},
		{"ghcr.io/huggingface/text-generation-inference:1.9.7", "", "--model-id", "1.9.7"},
	}
	genModels = []string{"webtest-org/alpha-7b", "webtest-org/beta-13b", "webtest-other/gamma-70b", "webtest-other/delta-1b"}
)

// The workload with a history: version 1, then an edit of its model
// revision and image digest, then deleted, then back.
const (
	demoNS, demoName = "audit", "timeline-demo"
	revA, revB       = "0e9e39f249a16976918f6564b8830bc894c89659", "5206a32e0bd3067aef1ce90f5528ade7d866253f"
	digestA, digestB = "sha256:1111111111111111111111111111111111111111111111111111111111111111", "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func demo(rev, digest string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: %s
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.4@%s
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--revision", "%s"]
`, demoName, demoNS, digest, rev)
}

var (
	corpusOnce sync.Once
	corpusDir  string
	corpusErr  string
)

// corpus builds the inventory once per test process and returns its
// directory (run `bomstream web` there).
func corpus(t *testing.T) string {
	t.Helper()
	corpusOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bomstream-web-corpus")
		if err != nil {
			corpusErr = err.Error()
			return
		}
		corpusDir = dir
		ok := t.Run("build-corpus", func(t *testing.T) { buildCorpus(t, dir) })
		if !ok {
			corpusErr = "building the corpus failed (see build-corpus)"
		}
	})
	if corpusErr != "" {
		t.Fatal(corpusErr)
	}
	return corpusDir
}

func buildCorpus(t *testing.T, dir string) {
	m := filepath.Join(dir, "manifests")
	copyFiles(t, filepath.Join("..", "..", "examples"), filepath.Join(m, "examples"))
	copyFiles(t, filepath.Join("..", "..", "transformer", "testdata", "manifests"), filepath.Join(m, "transformer"))
	copyFiles(t, filepath.Join("..", "..", "cmd", "bomstream", "testdata", "secrets-corpus"), filepath.Join(m, "secrets"))
	gen := filepath.Join(m, "generated")
	if err := os.MkdirAll(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := range generated {
		rt, model := genRuntimes[i%4], genModels[i/4%4]
		fmt.Fprintf(&sb, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gen-%05d\n  namespace: team-%02d\nspec:\n  template:\n    spec:\n      containers:\n      - name: server\n        image: %s\n", i, i%20, rt.image)
		switch {
		case rt.command != "" && rt.flag == "":
			fmt.Fprintf(&sb, "        command: %s\n        args: [%q]\n", rt.command, model)
		case rt.command != "":
			fmt.Fprintf(&sb, "        command: %s\n        args: [%q, %q]\n", rt.command, rt.flag, model)
		default:
			fmt.Fprintf(&sb, "        args: [%q, %q]\n", rt.flag, model)
		}
		if i%1000 == 999 {
			writeFile(t, filepath.Join(gen, fmt.Sprintf("gen-%02d.yaml", i/1000)), sb.String())
			sb.Reset()
		}
	}
	demoDir := filepath.Join(m, "demo")
	if err := os.MkdirAll(demoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	demoFile := filepath.Join(demoDir, "demo.yaml")
	writeFile(t, demoFile, demo(revA, digestA))
	writeFile(t, filepath.Join(demoDir, "clean.yaml"), clean)
	rules := filepath.Join(dir, "rules.yaml")
	writeFile(t, rules, cleanRules)
	env := []string{"BOMSTREAM_FINDINGS_RULES=" + rules}
	t.Log(lastLine(runOnce(t, dir, env, "--manifests", m)))
	writeFile(t, demoFile, demo(revB, digestB)) // the edit
	t.Log(lastLine(runOnce(t, dir, env, "--manifests", m)))
	if err := os.Remove(demoFile); err != nil { // the deletion
		t.Fatal(err)
	}
	t.Log(lastLine(runOnce(t, dir, env, "--manifests", m, "--confirm-tombstones")))
	writeFile(t, demoFile, demo(revB, digestB)) // the revival
	t.Log(lastLine(runOnce(t, dir, env, "--manifests", m)))
}

// clean is a workload no rule of cleanRules fires on: vLLM declared, at
// a version above the minimum, its image pinned by digest, its model from
// an allowed organisation at a pinned revision.
const clean = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: clean-demo
  namespace: audit
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.9.1@sha256:3333333333333333333333333333333333333333333333333333333333333333
        command: ["vllm", "serve"]
        args: ["meta-llama/Llama-3.1-8B-Instruct", "--revision", "0e9e39f249a16976918f6564b8830bc894c89659"]
`

// cleanRules are the default rules but model-license (which the corpus's
// manifests cannot satisfy), so that a workload can have no finding.
const cleanRules = `rules:
  - id: model-unpinned
    check: model-unpinned
    severity: medium
  - id: model-source
    check: model-source
    severity: high
    organisations: [meta-llama, Qwen, mistralai, google, microsoft, nvidia]
    registries: [huggingface.co, nvcr.io, s3, gcs, pvc, path, name, nim-image, ollama]
  - id: runtime-version
    check: runtime-version
    severity: high
    minimum:
      vllm: "0.8.5"
      sglang: "0.4.6"
  - id: image-digest
    check: image-digest
    severity: low
  - id: runtime-inferred
    check: runtime-inferred
    severity: info
`

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
