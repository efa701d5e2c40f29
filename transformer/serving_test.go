package transformer

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// The kinds of failure issue 29 found on real manifests, each as the
// smallest inputs that show it: the engine named only by an env family, a
// word inside a custom image's name, or the program its args run; and
// serving claimed where nothing serves.
func TestServingFromEvidence(t *testing.T) {
	gpu := []string{"nvidia.com/gpu"}
	t.Run("llama.cpp configured only through LLAMA_ARG_* variables", func(t *testing.T) {
		_, d := render(t, deploy("llama", schemas.Container{Name: "server", Image: "registry.acme.example/llm/server:3.1",
			Env:   []schemas.EnvVar{{Name: "LLAMA_ARG_HF_REPO", Value: "bartowski/Llama-3.2-3B-Instruct-GGUF"}, {Name: "LLAMA_ARG_CTX_SIZE", Value: "4096"}},
			Ports: []schemas.Port{{Port: 8080}}}))
		rt := mustRuntime(t, d, "llama.cpp", "", "inferred")
		if !slices.Contains(locations(rt), "spec.template.spec.containers[0].env[0]") {
			t.Errorf("evidence %v", locations(rt))
		}
		mustModel(t, d, "bartowski/Llama-3.2-3B-Instruct-GGUF", "huggingface", "pkg:huggingface/bartowski/Llama-3.2-3B-Instruct-GGUF")
		if d.Metadata.Component.prop("serving") != "inferred" {
			t.Errorf("a decision on weak signals is not said: %v", d.Metadata.Component.Properties)
		}
	})
	t.Run("a vendor build names its engine and version inside its name", func(t *testing.T) {
		_, d := render(t, deploy("neuron", schemas.Container{Name: "vllm", Image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/neuron-sdk2.20-vllm0.5.0-neuron:v8",
			Command: []string{"/bin/bash", "/opt/run.sh"}, Accelerators: []string{"aws.amazon.com/neuron"}}))
		mustRuntime(t, d, "vllm", "0.5.0", "inferred")
	})
	t.Run("args run the engine's program on a private image", func(t *testing.T) {
		_, d := render(t, deploy("t5", schemas.Container{Name: "inference", Image: "us-central1-docker.pkg.dev/acme/models/t5-small:1.0-cpu",
			Args: []string{"torchserve", "--start", "--foreground"}}))
		mustRuntime(t, d, "torchserve", "", "declared")
	})
	t.Run("a Triton client-tools image that sleeps serves nothing", func(t *testing.T) {
		noBOM(t, deploy("bench", schemas.Container{Name: "client", Image: "nvcr.io/nvidia/tritonserver:24.06-py3-sdk", Command: []string{"sleep", "infinity"}}))
	})
	t.Run("a model-download Job reusing a server image serves nothing", func(t *testing.T) {
		in := deploy("fetch", schemas.Container{Name: "fetch", Image: "vllm/vllm-openai:v0.9.2", Accelerators: gpu,
			Command: []string{"sh", "-c", "huggingface-cli download Qwen/Qwen3-8B --local-dir /models/qwen"}})
		in.Workload.Kind = "Job"
		noBOM(t, in)
	})
	t.Run("a one-shot script that serves in the background only to pull", func(t *testing.T) {
		in := deploy("pull", schemas.Container{Name: "ollama", Image: "ollama/ollama:latest",
			Command: []string{"/bin/sh", "-c", "ollama serve &\nsleep 10\nollama pull qwen:0.5b"}})
		in.Workload.Kind = "Job"
		noBOM(t, in)
		// The same as a long-running server serves.
		in.Workload.Kind = "Deployment"
		_, d := render(t, in)
		mustRuntime(t, d, "ollama", "", "declared")
	})
	t.Run("a custom server on an accelerator that names a model", func(t *testing.T) {
		_, d := render(t, deploy("sdxl", schemas.Container{Name: "serve", Image: "us-docker.pkg.dev/acme/gke-llm/max-diffusion:latest",
			Env: []schemas.EnvVar{{Name: "MODEL_NAME", Value: "stable_diffusion"}}, Ports: []schemas.Port{{Port: 8000}}, Accelerators: []string{"google.com/tpu"}}))
		if d == nil || len(d.byType("machine-learning-model")) != 1 {
			t.Fatalf("no BOM or not its model: %v", d)
		}
		// A GPU and a port alone (a notebook) are not enough.
		noBOM(t, deploy("nb", schemas.Container{Name: "lab", Image: "quay.io/jupyter/pytorch-notebook:cuda12", Ports: []schemas.Port{{Port: 8888}}, Accelerators: gpu}))
	})
}

// ConfigMaps are inputs: a start script a ConfigMap puts in the container,
// and env values a ConfigMap gives, are read as if they stood in the
// manifest, with locators that name the ConfigMap.
func TestServingConfigMapInputs(t *testing.T) {
	t.Run("start script", func(t *testing.T) {
		_, d := render(t, deploy("scripted", schemas.Container{Name: "server", Image: "ubuntu:22.04", Command: []string{"/scripts/start.sh"},
			Files: []schemas.File{{Path: "/scripts/start.sh", Kind: schemas.FileScript, Locator: `ConfigMap/start:data["start.sh"]`,
				Text: "pip install vllm==0.9.2\nexec vllm serve Qwen/Qwen3-8B --port 8000"}}}))
		rt := mustRuntime(t, d, "vllm", "", "declared")
		if !slices.Contains(locations(rt), `ConfigMap/start:data["start.sh"]`) {
			t.Errorf("evidence %v", locations(rt))
		}
		mustModel(t, d, "Qwen/Qwen3-8B", "huggingface", "pkg:huggingface/Qwen/Qwen3-8B")
	})
	t.Run("envFrom and configMapKeyRef", func(t *testing.T) {
		from := &schemas.KeyRef{Kind: "configMap", Name: "tgi-config", Key: "MODEL_ID"}
		_, d := render(t, deploy("tgi", schemas.Container{Name: "tgi", Image: "ghcr.io/huggingface/text-generation-inference:2.4.0",
			EnvFrom: []schemas.EnvSource{{Kind: "configMap", Name: "tgi-config", Env: []schemas.EnvVar{{Name: "MODEL_ID", Value: "Intel/neural-chat-7b-v3-3", From: from}}}}}))
		m := mustModel(t, d, "Intel/neural-chat-7b-v3-3", "huggingface", "pkg:huggingface/Intel/neural-chat-7b-v3-3")
		if !slices.Contains(locations(m), "ConfigMap/tgi-config:data.MODEL_ID") {
			t.Errorf("evidence %v", locations(m))
		}
		// An explicit env var wins over envFrom, as in Kubernetes.
		_, d = render(t, deploy("tgi", schemas.Container{Name: "tgi", Image: "ghcr.io/huggingface/text-generation-inference:2.4.0",
			Env:     []schemas.EnvVar{{Name: "MODEL_ID", Value: "org/explicit"}},
			EnvFrom: []schemas.EnvSource{{Kind: "configMap", Name: "tgi-config", Env: []schemas.EnvVar{{Name: "MODEL_ID", Value: "org/from-map", From: from}}}}}))
		if got := modelNames(d); !slices.Equal(got, []string{"org/explicit"}) {
			t.Errorf("models %v", got)
		}
		// A client of the engine that takes its endpoint from a ConfigMap.
		noBOM(t, deploy("usvc", schemas.Container{Name: "embedding", Image: "opea/embedding-tei:latest",
			EnvFrom: []schemas.EnvSource{{Kind: "configMap", Name: "usvc", Env: []schemas.EnvVar{{Name: "TEI_EMBEDDING_ENDPOINT", Redacted: true, From: &schemas.KeyRef{Kind: "configMap", Name: "usvc", Key: "TEI_EMBEDDING_ENDPOINT"}}}}}}))
	})
}

// Explain says why: every signal of every container with its weight and
// locator, and the verdict.
func TestExplain(t *testing.T) {
	r := newRenderer(t)
	x, err := r.Explain(event(t, deploy("bench", schemas.Container{Name: "client", Locator: "spec.template.spec.containers[0]",
		Image: "nvcr.io/nvidia/tritonserver:24.06-py3-sdk", Command: []string{"sleep", "infinity"}})))
	if err != nil {
		t.Fatal(err)
	}
	if x.Serving || len(x.Units) != 1 || x.Units[0].Serving {
		t.Fatalf("explanation %+v", x)
	}
	var names []string
	for _, s := range x.Units[0].Signals {
		names = append(names, s.Signal)
		if s.Weight == 0 || s.Locator == "" {
			t.Errorf("signal without weight or locator: %+v", s)
		}
	}
	if !slices.Contains(names, "client") || !slices.Contains(names, "idle") {
		t.Errorf("signals %v", names)
	}
	var b bytes.Buffer
	if err := x.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NOT SERVING", "container client", "-4.00 client", "-4.00 idle", "spec.template.spec.containers[0].command[0]"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// The weights and the threshold are data: a rules file changes them.
func TestServingWeightsAreData(t *testing.T) {
	in := deploy("sdxl", schemas.Container{Name: "serve", Image: "us-docker.pkg.dev/acme/max-diffusion:latest",
		Env: []schemas.EnvVar{{Name: "MODEL_NAME", Value: "sd"}}, Accelerators: []string{"google.com/tpu"}})
	if res, _ := render(t, in); res.BOM == nil {
		t.Fatal("no BOM with the built-in weights")
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, []byte("runtimes: []\nserving:\n  weights: {accelerator: 0.1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer(Config{RulesFile: f})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Render(event(t, in)); err != nil || res.BOM != nil {
		t.Errorf("with accelerator weighing 0.1: %v %q", err, res.Skipped)
	}
	if err := os.WriteFile(f, []byte("runtimes: []\nserving:\n  weights: {nosuch: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRenderer(Config{RulesFile: f}); err == nil || !strings.Contains(err.Error(), `"nosuch" is no signal`) {
		t.Errorf("an unknown signal: %v", err)
	}
}
