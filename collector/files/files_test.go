package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  namespace: ml
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:%s
`

// Two documents naming one workload must not both be published: every pass
// would then append both states in turn. The later one wins, as with kubectl.
func TestLoadDuplicateWorkloadLaterWins(t *testing.T) {
	dir := t.TempDir()
	for name, tag := range map[string]string{"a.yaml": "v0.8.0", "b.yaml": "v0.9.0"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Replace(deployment, "%s", tag, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := collector.NewNormalizer(collector.Config{Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	loaded := Load(dir, dir, n)
	if loaded.Err != nil {
		t.Fatal(loaded.Err)
	}
	if len(loaded.Events) != 1 {
		t.Fatalf("events = %d, want 1", len(loaded.Events))
	}
	in := loaded.Events[0].Data.Inputs
	if in.Source != "file:b.yaml" {
		t.Errorf("winning source = %q, want file:b.yaml", in.Source)
	}
	if len(loaded.Notes) != 1 || !strings.HasSuffix(loaded.Notes[0].File, "a.yaml") || !strings.Contains(loaded.Notes[0].Reason, "b.yaml") {
		t.Errorf("notes = %v, want one for a.yaml naming b.yaml", loaded.Notes)
	}
}

const linked = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  namespace: ml
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.9.0
        args: ["--model", "org/base", "--enable-lora"]
      volumes:
      - name: adapters
        configMap: {name: lora-adapters}
---
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata:
  name: nim
  namespace: ml
spec:
  image: {repository: nvcr.io/nim/meta/llama-3.2-1b-instruct, tag: "1.12.0"}
  storage:
    nimCache: {name: llama-cache}
`

const linkedObjects = `apiVersion: v1
kind: ConfigMap
metadata:
  name: lora-adapters
  namespace: ml
data:
  configmap.yaml: |
    vLLMLoRAConfig:
      defaultBaseModel: org/base
      ensureExist:
        models:
        - id: sql
          source: %s
---
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMCache
metadata:
  name: llama-cache
  namespace: ml
spec:
  source:
    ngc:
      modelPuller: nvcr.io/nim/meta/llama-3.2-1b-instruct:1.12.0
      model: {engine: tensorrt_llm, precision: fp16}
---
apiVersion: v1
kind: Secret
metadata: {name: lora-adapters, namespace: ml}
stringData: {token: never-read}
`

// A workload's links are followed across the files of a load: the adapters
// a mounted ConfigMap lists and the NIMCache a NIMService names become fields
// of its Inputs, so editing the ConfigMap changes its input hash, and only
// its.
func TestLoadFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("workloads.yaml", linked)
	write("objects.yaml", strings.Replace(linkedObjects, "%s", "org/sql-lora", 1))
	n, err := collector.NewNormalizer(collector.Config{Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	load := func() map[string]*schemas.Inputs {
		loaded := Load(dir, dir, n)
		if loaded.Err != nil {
			t.Fatal(loaded.Err)
		}
		out := map[string]*schemas.Inputs{}
		for _, ev := range loaded.Events {
			out[ev.Data.Workload.Kind+"/"+ev.Data.Workload.Name] = ev.Data.Inputs
		}
		return out
	}
	before := load()
	chat := before["Deployment/chat"]
	if f, ok := chat.Components[0].Field("loraAdapter"); !ok || f.Value != "org/sql-lora" ||
		f.Locator != `ConfigMap/lora-adapters:data["configmap.yaml"]:vLLMLoRAConfig.ensureExist.models[0].source` {
		t.Errorf("chat adapter field = %+v, %v", f, ok)
	}
	nim := before["NIMService/nim"]
	if f, ok := nim.Field("ngcModelEngine"); !ok || f.Value != "tensorrt_llm" || f.Locator != "NIMCache/llama-cache:spec.source.ngc.model.engine" {
		t.Errorf("nim engine field = %+v, %v (fields %+v)", f, ok, nim.Fields)
	}

	write("objects.yaml", strings.Replace(linkedObjects, "%s", "org/sql-lora-v2", 1))
	after := load()
	for k, in := range before {
		h1, _ := schemas.InputHash(in)
		h2, _ := schemas.InputHash(after[k])
		if changed := h1 != h2; changed != (k == "Deployment/chat") {
			t.Errorf("%s: input hash changed = %v after editing the ConfigMap", k, changed)
		}
	}
}
