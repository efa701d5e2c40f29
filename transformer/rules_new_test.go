package transformer

import (
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// The rule kinds of rules.yaml added with the field's serving stacks:
// clients, image tag rules, args-only launches, defaults, presets, pairs,
// imageFields, versionFields, listFlags/listEnv, and the generic profile.

// noBOM checks that in renders nothing: no runtime, no model that stands alone.
func noBOM(t *testing.T, in *schemas.Inputs) {
	t.Helper()
	res, d := render(t, in)
	if res.BOM != nil || d != nil || res.Skipped != SkipNothing || len(res.Summary.Runtimes) != 0 {
		t.Errorf("want no BOM: skipped %q summary %+v BOM %s", res.Skipped, res.Summary, res.BOM)
	}
}

// fieldsOnly is a workload of kind whose facts are all fields, with one
// component without containers.
func fieldsOnly(kind string, fs ...schemas.Field) *schemas.Inputs {
	return &schemas.Inputs{Workload: wl(kind, strings.ToLower(kind)), Fields: fs,
		Components: []schemas.Component{{Name: "main", Locator: "spec"}}}
}

func fld(name, value, locator string) schemas.Field {
	return schemas.Field{Name: name, Value: value, Locator: locator}
}

func TestClients(t *testing.T) {
	t.Run("vllm bench serve on a vllm image", func(t *testing.T) {
		noBOM(t, deploy("bench", schemas.Container{Name: "bench", Image: "vllm/vllm-openai:v0.10.1",
			Command: []string{"vllm", "bench", "serve", "--model", "Qwen/Qwen3-0.6B", "--base-url", "http://vllm:8000", "--num-prompts", "100"}}))
	})
	t.Run("benchmark_serving.py", func(t *testing.T) {
		noBOM(t, deploy("bench", schemas.Container{Name: "bench", Image: "vllm/vllm-openai:v0.8.5",
			Command: []string{"python3", "benchmarks/benchmark_serving.py", "--model", "meta-llama/Llama-3.1-8B-Instruct"}}))
	})
	t.Run("--target and a model", func(t *testing.T) {
		noBOM(t, deploy("loadgen", schemas.Container{Name: "loadgen", Image: "ghcr.io/acme/loadgen:1.0",
			Command: []string{"python", "run.py", "--target", "http://svc:8000", "--model", "meta-llama/Llama-3.1-8B-Instruct"}}))
	})
	t.Run("OPENAI_BASE_URL env and a model", func(t *testing.T) {
		noBOM(t, deploy("chat", schemas.Container{Name: "chat", Image: "ghcr.io/acme/chat-ui:2.1",
			Args: []string{"--model", "meta-llama/Llama-3.1-8B-Instruct"},
			Env:  []schemas.EnvVar{{Name: "OPENAI_BASE_URL", Value: "http://vllm:8000/v1"}}}))
	})
	t.Run("the same model without a client flag makes a BOM", func(t *testing.T) {
		// On a GPU, the model it names is its own: it serves.
		gpu := []string{"nvidia.com/gpu"}
		res, d := render(t, deploy("app", schemas.Container{Name: "app", Image: "ghcr.io/acme/app:1.0",
			Command: []string{"python", "run.py", "--model", "meta-llama/Llama-3.1-8B-Instruct"}, Accelerators: gpu}))
		if d == nil || !slices.Equal(res.Summary.Models, []string{"meta-llama/Llama-3.1-8B-Instruct"}) {
			t.Errorf("summary %+v", res.Summary)
		}
		// With the client flag, the GPU does not make it a server.
		noBOM(t, deploy("loadgen", schemas.Container{Name: "loadgen", Image: "ghcr.io/acme/loadgen:1.0", Accelerators: gpu,
			Command: []string{"python", "run.py", "--target", "http://svc:8000", "--model", "meta-llama/Llama-3.1-8B-Instruct"}}))
	})
	t.Run("a real vllm server in the same pod still works", func(t *testing.T) {
		in := deploy("pair",
			schemas.Container{Name: "bench", Image: "vllm/vllm-openai:v0.10.1",
				Command: []string{"vllm", "bench", "serve", "--model", "org/bench-model", "--base-url", "http://localhost:8000"}},
			schemas.Container{Name: "server", Image: "vllm/vllm-openai:v0.10.1", Command: []string{"vllm", "serve", "org/served-model"}},
		)
		_, d := render(t, in)
		v := mustRuntime(t, d, "vllm", "0.10.1", "declared")
		// Only the server's container is evidence of the engine.
		for _, l := range locations(v) {
			if strings.HasPrefix(l, "spec.template.spec.containers[0]") {
				t.Errorf("the client is evidence of vllm: %v", locations(v))
			}
		}
		m := mustModel(t, d, "org/served-model", "huggingface", "pkg:huggingface/org/served-model")
		servedBy(t, d, "vllm", m)
	})
}

func TestImageTagRules(t *testing.T) {
	for _, tc := range []struct {
		image, runtime, version, variant string
	}{
		// LMCache's tag is LMCache's release, not vLLM's.
		{"lmcache/vllm-openai:v0.3.7", "vllm", "", ""},
		{"rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521", "vllm", "0.8.5", ""},
		// A rocm/vllm tag with no vLLM version in it gives none.
		{"rocm/vllm:latest", "vllm", "", ""},
		{"vault.habana.ai/gaudi-docker/1.24.0/ubuntu24.04/habanalabs/vllm-0.17.1-ptfork-2.10.0:1.24.0-1007", "vllm", "0.17.1", ""},
		{"openvino/model_server:2025.3-gpu", "ovms", "2025.3", "gpu"},
		{"vllm/vllm-openai:v0.9.2", "vllm", "0.9.2", ""},
	} {
		t.Run(tc.image, func(t *testing.T) {
			_, d := render(t, deploy("img", schemas.Container{Name: "c", Image: tc.image}))
			rt := mustRuntime(t, d, tc.runtime, tc.version, "inferred")
			if rt.prop("runtime:variant") != tc.variant {
				t.Errorf("variant %q, want %q", rt.prop("runtime:variant"), tc.variant)
			}
			if tc.version == "" && (rt.Version != "" || strings.Contains(rt.PURL, "@")) {
				t.Errorf("version %q purl %q", rt.Version, rt.PURL)
			}
		})
	}
	t.Run("vllm serve on the habana image: declared, the repository's version", func(t *testing.T) {
		_, d := render(t, deploy("gaudi", schemas.Container{Name: "c",
			Image:   "vault.habana.ai/gaudi-docker/1.24.0/ubuntu24.04/habanalabs/vllm-0.17.1-ptfork-2.10.0:1.24.0-1007",
			Command: []string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"}}))
		rt := mustRuntime(t, d, "vllm", "0.17.1", "declared")
		if rt.PURL != "pkg:pypi/vllm@0.17.1" {
			t.Errorf("purl %s", rt.PURL)
		}
	})
	t.Run("vllm serve on the lmcache image: declared, no version", func(t *testing.T) {
		_, d := render(t, deploy("lmc", schemas.Container{Name: "c", Image: "lmcache/vllm-openai:v0.3.7",
			Command: []string{"vllm", "serve", "Qwen/Qwen3-0.6B"}}))
		mustRuntime(t, d, "vllm", "", "declared")
	})
}

func TestArgsOnlyLaunch(t *testing.T) {
	t.Run("vllm image, args start with the model", func(t *testing.T) {
		_, d := render(t, deploy("a", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Args: []string{"Qwen/Qwen3-0.6B", "--port", "8000"}}))
		mustRuntime(t, d, "vllm", "0.9.2", "inferred")
		m := onlyModel(t, d)
		mustModel(t, d, "Qwen/Qwen3-0.6B", "huggingface", "pkg:huggingface/Qwen/Qwen3-0.6B")
		servedBy(t, d, "vllm", m)
		if !slices.Contains(locations(m), "spec.template.spec.containers[0].args[0]") {
			t.Errorf("occurrences %v", locations(m))
		}
	})
	t.Run("args starting with a shell are no model", func(t *testing.T) {
		_, d := render(t, deploy("s", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Args: []string{"/bin/sh", "start.sh"}}))
		mustRuntime(t, d, "vllm", "0.9.2", "inferred")
		if got := modelNames(d); len(got) != 0 {
			t.Errorf("models %v", got)
		}
		// An engine's image that only sleeps serves nothing.
		noBOM(t, deploy("s", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Args: []string{"/bin/sh", "-c", "sleep 5"}}))
	})
	t.Run("args that run a shell script: the script is what runs", func(t *testing.T) {
		_, d := render(t, deploy("s", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Args: []string{"/bin/sh", "-c", "exec vllm serve org/model --port 8000"}}))
		mustRuntime(t, d, "vllm", "0.9.2", "declared")
		if got := modelNames(d); !slices.Equal(got, []string{"org/model"}) {
			t.Errorf("models %v", got)
		}
	})
	t.Run("args-only pattern needs the engine's image", func(t *testing.T) {
		noBOM(t, deploy("o", schemas.Container{Name: "c", Image: "ghcr.io/acme/tool:1", Args: []string{"serve", "--port", "8000"}}))
	})
	t.Run("llama.cpp image, -m names the model", func(t *testing.T) {
		_, d := render(t, deploy("l", schemas.Container{Name: "c", Image: "ghcr.io/ggml-org/llama.cpp:server", Args: []string{"-m", "/models/qwen3-0.6b-q8_0.gguf", "--port", "8080"}}))
		mustRuntime(t, d, "llama.cpp", "", "inferred")
		m := onlyModel(t, d)
		mustModel(t, d, "/models/qwen3-0.6b-q8_0.gguf", "path", "")
		servedBy(t, d, "llama.cpp", m)
	})
	t.Run("-m is no model flag for other images", func(t *testing.T) {
		noBOM(t, deploy("o", schemas.Container{Name: "c", Image: "ghcr.io/acme/tool:1", Args: []string{"-m", "/models/x.bin"}}))
	})
}

func TestKubeAIEngines(t *testing.T) {
	for engine, runtime := range map[string]string{"VLLM": "vllm", "OLlama": "ollama", "Infinity": "infinity", "FasterWhisper": "faster-whisper"} {
		t.Run(engine, func(t *testing.T) {
			_, d := render(t, fieldsOnly("Model", fld("kubeaiEngine", engine, "spec.engine"), fld("modelUrl", "hf://org/name", "spec.url")))
			rt := mustRuntime(t, d, runtime, "", "declared")
			if !slices.Contains(locations(rt), "spec.engine") {
				t.Errorf("occurrences %v", locations(rt))
			}
			if got := d.byType("application"); len(got) != 1 {
				t.Errorf("runtimes %d, want only %s", len(got), runtime)
			}
			mustModel(t, d, "org/name", "huggingface", "pkg:huggingface/org/name")
		})
	}
	t.Run("an engine name that is no rule's", func(t *testing.T) {
		res, _ := render(t, fieldsOnly("Model", fld("kubeaiEngine", "OtherEngine", "spec.engine")))
		if len(res.Summary.Runtimes) != 0 {
			t.Errorf("runtimes %v", res.Summary.Runtimes)
		}
	})
}

func TestKaitoFields(t *testing.T) {
	preset := func(v string) schemas.Field { return fld("kaitoPreset", v, "inference.preset.name") }
	t.Run("preset from the catalog, vllm by default", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Workspace", preset("phi-4-mini-instruct")))
		rt := mustRuntime(t, d, "vllm", "", "inferred")
		if !slices.Contains(locations(rt), "inference.preset.name") || !hasMethodPrefix(rt, "default runtime of field kaitoPreset") {
			t.Errorf("vllm evidence %v %v", locations(rt), methodValues(rt))
		}
		m := onlyModel(t, d)
		mustModel(t, d, "microsoft/Phi-4-mini-instruct", "huggingface", "pkg:huggingface/microsoft/Phi-4-mini-instruct")
		if m.prop("confidence") != "declared" || !hasMethodPrefix(m, "field kaitoPreset=phi-4-mini-instruct (preset)") {
			t.Errorf("model %+v", m)
		}
		servedBy(t, d, "vllm", m)
	})
	t.Run("catalog lookup ignores case", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Workspace", preset("Falcon-7B")))
		mustModel(t, d, "tiiuae/falcon-7b", "huggingface", "pkg:huggingface/tiiuae/falcon-7b")
	})
	t.Run("an unknown preset is kept as written", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Workspace", preset("my-custom-llm")))
		m := onlyModel(t, d)
		if m.Name != "my-custom-llm" || hasMethodPrefix(m, "field kaitoPreset=my-custom-llm (preset)") {
			t.Errorf("model %+v", m)
		}
	})
	t.Run("a preset that is a Hugging Face id stands for itself", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Workspace", preset("Qwen/Qwen3-8B")))
		mustModel(t, d, "Qwen/Qwen3-8B", "huggingface", "pkg:huggingface/Qwen/Qwen3-8B")
	})
	t.Run("kaitoRuntime transformers: no vllm", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Workspace", preset("falcon-7b"), fld("kaitoRuntime", "transformers", "metadata.annotations.'kaito.sh/runtime'")))
		mustRuntime(t, d, "transformers", "", "declared")
		noRuntime(t, d, "vllm")
		m := mustModel(t, d, "tiiuae/falcon-7b", "huggingface", "pkg:huggingface/tiiuae/falcon-7b")
		servedBy(t, d, "transformers", m)
	})
	t.Run("kaitoRuntime vllm: declared", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Workspace", preset("falcon-7b"), fld("kaitoRuntime", "vllm", "metadata.annotations.'kaito.sh/runtime'")))
		mustRuntime(t, d, "vllm", "", "declared")
	})
	t.Run("loraAdapterImage is an oci model", func(t *testing.T) {
		ref := "myregistry.azurecr.io/adapters/falcon-7b-sql:0.0.1"
		_, d := render(t, fieldsOnly("Workspace", preset("falcon-7b"), fld("loraAdapterImage", ref, "inference.adapters[0].source.image")))
		a := mustModel(t, d, "oci://"+ref, "oci", "pkg:oci/falcon-7b-sql?repository_url=myregistry.azurecr.io/adapters/falcon-7b-sql&tag=0.0.1")
		if a.Version != "0.0.1" || a.prop("confidence") != "declared" || !slices.Contains(locations(a), "inference.adapters[0].source.image") {
			t.Errorf("adapter %+v", a)
		}
		mustModel(t, d, "tiiuae/falcon-7b", "huggingface", "pkg:huggingface/tiiuae/falcon-7b")
	})
	t.Run("loraAdapter URLs are adapters", func(t *testing.T) {
		_, d := render(t, fieldsOnly("Model", fld("kubeaiEngine", "VLLM", "spec.engine"),
			fld("loraAdapter", "hf://acme/sql-lora", "spec.adapters[0].url")))
		a := mustModel(t, d, "acme/sql-lora", "huggingface", "pkg:huggingface/acme/sql-lora")
		if a.prop("model:adapter") != "lora" {
			t.Errorf("adapter props %v", a.Properties)
		}
	})
}

func TestRayServeFields(t *testing.T) {
	app := "spec.serveConfigV2:applications[0]"
	llm := func(i string) string { return app + ".args.llm_configs[" + i + "]" }
	serveApp := fld("rayServeApp", "ray.serve.llm:build_openai_app", app+".import_path")
	t.Run("Serve LLM app: ray-serve declared, vllm inferred under it", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", serveApp, fld("rayLLMModelId", "Qwen/Qwen2.5-0.5B-Instruct", llm("0")+".model_loading_config.model_id")))
		rs := mustRuntime(t, d, "ray-serve", "", "declared")
		v := mustRuntime(t, d, "vllm", "", "inferred")
		if v.prop("runtime:wrappedBy") != "ray-serve" || rs.prop("runtime:backend") != "vllm" || rs.prop("runtime:backend:inferred") != "vllm" {
			t.Errorf("ray-serve %v vllm %v", rs.Properties, v.Properties)
		}
		if !slices.Contains(d.dependsOn(rs.BOMRef), v.BOMRef) {
			t.Errorf("ray-serve depends on %v", d.dependsOn(rs.BOMRef))
		}
		// Without a source, the id is the Hugging Face model.
		m := onlyModel(t, d)
		mustModel(t, d, "Qwen/Qwen2.5-0.5B-Instruct", "huggingface", "pkg:huggingface/Qwen/Qwen2.5-0.5B-Instruct")
		servedBy(t, d, "vllm", m)
		if v.prop("runtime:servedModelName") != "" {
			t.Errorf("served name %q without a source", v.prop("runtime:servedModelName"))
		}
	})
	t.Run("rayLLMEngine vLLM: declared", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", serveApp, fld("rayLLMEngine", "vLLM", llm("0")+".llm_engine")))
		v := mustRuntime(t, d, "vllm", "", "declared")
		if v.prop("runtime:wrappedBy") != "ray-serve" || !slices.Contains(locations(v), llm("0")+".llm_engine") {
			t.Errorf("vllm %v %v", v.Properties, locations(v))
		}
		if hasMethodPrefix(v, "default runtime") {
			t.Errorf("default claimed though the engine is named: %v", methodValues(v))
		}
	})
	t.Run("another import path is Ray Serve alone", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", fld("rayServeApp", "fruit.deployment_graph", app+".import_path")))
		mustRuntime(t, d, "ray-serve", "", "declared")
		noRuntime(t, d, "vllm")
	})
	t.Run("rayVersion is ray-serve's version, declared", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", serveApp, fld("rayVersion", "2.49.1", "spec.rayClusterConfig.rayVersion")))
		rs := mustRuntime(t, d, "ray-serve", "2.49.1", "declared")
		if rs.PURL != "pkg:pypi/ray@2.49.1" {
			t.Errorf("purl %s", rs.PURL)
		}
		var found bool
		for _, id := range rs.Evidence.Identity {
			if id.Field == "version" && id.Confidence == 1 {
				found = true
			}
		}
		if !found {
			t.Errorf("version evidence %+v", rs.Evidence.Identity)
		}
		mustRuntime(t, d, "vllm", "", "inferred")
	})
	t.Run("rayVersion alone names no runtime", func(t *testing.T) {
		noBOM(t, fieldsOnly("RayCluster", fld("rayVersion", "2.49.1", "spec.rayVersion")))
	})
	t.Run("model id with a source beside it is the served name", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", serveApp,
			fld("rayLLMModelId", "qwen-0.5b", llm("0")+".model_loading_config.model_id"),
			fld("rayLLMModelSource", "Qwen/Qwen2.5-0.5B-Instruct", llm("0")+".model_loading_config.model_source")))
		m := onlyModel(t, d)
		mustModel(t, d, "Qwen/Qwen2.5-0.5B-Instruct", "huggingface", "pkg:huggingface/Qwen/Qwen2.5-0.5B-Instruct")
		v := mustRuntime(t, d, "vllm", "", "inferred")
		if v.prop("runtime:servedModelName") != "qwen-0.5b" {
			t.Errorf("served name %q", v.prop("runtime:servedModelName"))
		}
		servedBy(t, d, "vllm", m)
	})
	t.Run("a bucket source below model_source pairs too", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", serveApp,
			fld("rayLLMModelId", "mistral", llm("0")+".model_loading_config.model_id"),
			fld("rayLLMModelSource", "s3://REDACTED@acme-models/mistral-7b", llm("0")+".model_loading_config.model_source.bucket_uri")))
		if got := modelNames(d); !slices.Equal(got, []string{"s3://acme-models/mistral-7b"}) {
			t.Errorf("models %v", got)
		}
	})
	t.Run("a source of another config does not pair", func(t *testing.T) {
		_, d := render(t, fieldsOnly("RayService", serveApp,
			fld("rayLLMModelId", "Qwen/Qwen2.5-0.5B-Instruct", llm("0")+".model_loading_config.model_id"),
			fld("rayLLMModelSource", "s3://acme-models/other", llm("1")+".model_loading_config.model_source")))
		got := modelNames(d)
		slices.Sort(got)
		if !slices.Equal(got, []string{"Qwen/Qwen2.5-0.5B-Instruct", "s3://acme-models/other"}) {
			t.Errorf("models %v", got)
		}
		v, _ := d.runtime("vllm")
		if v.prop("runtime:servedModelName") != "" {
			t.Errorf("served name %q", v.prop("runtime:servedModelName"))
		}
	})
}

func TestClassifyModelSources(t *testing.T) {
	digest := "sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct {
		in, id, kind, rev string
	}{
		{"hf://org/name:rev1", "org/name", locHF, "rev1"},
		{"hf://org/name@0123abc/sub/model.gguf", "org/name", locHF, "0123abc"},
		{"hf://org/name", "org/name", locHF, ""},
		{"huggingface://TheBloke/phi-2-GGUF/phi-2.Q8_0.gguf", "TheBloke/phi-2-GGUF", locHF, ""},
		{"s3://anonymous@bucket/models/p", "s3://bucket/models/p", "s3", ""},
		{"s3://user:secret@bucket", "s3://bucket", "s3", ""},
		{"https://REDACTED@huggingface.co/org/name", "org/name", locHF, ""},
		{"https://user:tok@huggingface.co/org/name.git", "org/name", locHF, ""},
		{"oci://quay.io/org/model@" + digest, "oci://quay.io/org/model@" + digest, "oci", ""},
		{"oci://quay.io/org/model:v1", "oci://quay.io/org/model:v1", "oci", ""},
		{"https://example.com/model.bin", "https://example.com/model.bin", locURL, ""},
	} {
		id, kind, rev := classifyModel(tc.in, false)
		if id != tc.id || kind != tc.kind || rev != tc.rev {
			t.Errorf("classifyModel(%q) = %q %q %q, want %q %q %q", tc.in, id, kind, rev, tc.id, tc.kind, tc.rev)
		}
	}
	t.Run("rendered: the revision of the URI pins the model", func(t *testing.T) {
		_, d := render(t, deploy("r", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Command: []string{"vllm", "serve", "--model", "hf://org/name@0123abc/sub"}}))
		m := mustModel(t, d, "org/name", "huggingface", "pkg:huggingface/org/name@0123abc")
		if m.prop("model:revision") != "0123abc" || m.prop("model:unpinned") != "" {
			t.Errorf("props %v", m.Properties)
		}
	})
	t.Run("rendered: an oci model by digest is pinned", func(t *testing.T) {
		ref := "quay.io/org/model@" + digest
		_, d := render(t, deploy("o", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Command: []string{"vllm", "serve", "--model", "oci://" + ref}}))
		m := mustModel(t, d, "oci://"+ref, "oci", "pkg:oci/model@sha256%3A"+strings.Repeat("cd", 32)+"?repository_url=quay.io/org/model")
		if m.Version != digest || m.prop("model:digest") != digest || m.prop("model:unpinned") != "" {
			t.Errorf("model %+v", m)
		}
	})
	t.Run("rendered: credentials never reach the model's name", func(t *testing.T) {
		res, d := render(t, deploy("u", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Command: []string{"vllm", "serve", "--model", "https://REDACTED@huggingface.co/org/name"}}))
		mustModel(t, d, "org/name", "huggingface", "pkg:huggingface/org/name")
		if !slices.Equal(res.Summary.Models, []string{"org/name"}) {
			t.Errorf("models %v", res.Summary.Models)
		}
	})
}

func TestListModels(t *testing.T) {
	t.Run("--models NAME=FILE ... all", func(t *testing.T) {
		_, d := render(t, deploy("ts", schemas.Container{Name: "c", Image: "pytorch/torchserve:0.12.0",
			Command: []string{"torchserve", "--start", "--model-store", "/home/model-server/model-store", "--models", "squeezenet=squeezenet1_1.mar", "resnet=resnet-18.mar", "all", "--ncs"}}))
		mustRuntime(t, d, "torchserve", "0.12.0", "declared")
		got := modelNames(d)
		slices.Sort(got)
		if !slices.Equal(got, []string{"resnet-18.mar", "squeezenet1_1.mar"}) {
			t.Fatalf("models %v", got)
		}
		r, _ := d.model("resnet-18.mar")
		if !slices.Contains(locations(r), "spec.template.spec.containers[0].command[6]") {
			t.Errorf("resnet occurrences %v", locations(r))
		}
		for _, n := range got {
			m, _ := d.model(n)
			servedBy(t, d, "torchserve", m)
		}
	})
	t.Run("--models all alone names none", func(t *testing.T) {
		_, d := render(t, deploy("ts", schemas.Container{Name: "c", Image: "pytorch/torchserve:0.12.0",
			Command: []string{"torchserve", "--start", "--models", "all"}}))
		if got := modelNames(d); len(got) != 0 {
			t.Errorf("models %v", got)
		}
	})
	t.Run("INFINITY_MODEL_ID a;b;", func(t *testing.T) {
		_, d := render(t, deploy("inf", schemas.Container{Name: "c", Image: "michaelf34/infinity:0.0.77", Args: []string{"v2", "--port", "7997"},
			Env: []schemas.EnvVar{{Name: "INFINITY_MODEL_ID", Value: "BAAI/bge-small-en-v1.5;mixedbread-ai/mxbai-rerank-xsmall-v1;"}}}))
		mustRuntime(t, d, "infinity", "0.0.77", "declared")
		got := modelNames(d)
		slices.Sort(got)
		if !slices.Equal(got, []string{"BAAI/bge-small-en-v1.5", "mixedbread-ai/mxbai-rerank-xsmall-v1"}) {
			t.Fatalf("models %v", got)
		}
		for _, n := range got {
			m := mustModel(t, d, n, "huggingface", "pkg:huggingface/"+n)
			if !slices.Contains(locations(m), "spec.template.spec.containers[0].env[0]") {
				t.Errorf("%s occurrences %v", n, locations(m))
			}
		}
	})
}

func TestGenericProfile(t *testing.T) {
	mk := func(profile string) *schemas.Inputs {
		in := deploy("g", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.9.2", Command: []string{"vllm", "serve", "Qwen/Qwen3-0.6B"}})
		in.Workload.Kind = "LocalModelEndpoint"
		in.Workload.APIVersion = "acme.example.com/v1"
		in.Profile = profile
		return in
	}
	_, d := render(t, mk(schemas.ProfileGeneric))
	if got := d.Metadata.Component.props("profile"); !slices.Equal(got, []string{"generic"}) {
		t.Errorf("generic: profile properties %v", got)
	}
	mustRuntime(t, d, "vllm", "0.9.2", "declared")
	_, d = render(t, mk(""))
	if got := d.Metadata.Component.props("profile"); len(got) != 0 {
		t.Errorf("own profile: profile properties %v", got)
	}
	// The profile is part of the inputs: it changes the hash.
	a, _ := render(t, mk(schemas.ProfileGeneric))
	b, _ := render(t, mk(""))
	if a.BomHash == b.BomHash {
		t.Error("the profile does not reach the BOM")
	}
}
