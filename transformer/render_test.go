package transformer

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// deploy is a Deployment with one component holding cs.
func deploy(name string, cs ...schemas.Container) *schemas.Inputs {
	for i := range cs {
		if cs[i].Locator == "" {
			cs[i].Locator = "spec.template.spec.containers[" + string(rune('0'+i)) + "]"
		}
	}
	return &schemas.Inputs{Workload: wl("Deployment", name), Components: []schemas.Component{{Name: "main", Locator: "spec.template", Containers: cs}}}
}

func mustRuntime(t *testing.T, d *bomDoc, name, version, conf string) docComp {
	t.Helper()
	if d == nil {
		t.Fatalf("no BOM; want runtime %s", name)
	}
	c, ok := d.runtime(name)
	if !ok {
		t.Fatalf("no runtime %s in %+v", name, d.byType("application"))
	}
	if c.Version != version || c.prop("runtime:confidence") != conf || c.prop("confidence") != conf {
		t.Errorf("runtime %s: version %q confidence %q, want %q %q", name, c.Version, c.prop("runtime:confidence"), version, conf)
	}
	return c
}

func noRuntime(t *testing.T, d *bomDoc, name string) {
	t.Helper()
	if d == nil {
		return
	}
	if _, ok := d.runtime(name); ok {
		t.Errorf("runtime %s reported", name)
	}
}

func mustModel(t *testing.T, d *bomDoc, name, kind, purl string) docComp {
	t.Helper()
	m, ok := d.model(name)
	if !ok {
		var names []string
		for _, c := range d.byType("machine-learning-model") {
			names = append(names, c.Name)
		}
		t.Fatalf("no model %s; models %v", name, names)
	}
	if m.prop("model:location-kind") != kind || m.PURL != purl {
		t.Errorf("model %s: kind %q purl %q, want %q %q", name, m.prop("model:location-kind"), m.PURL, kind, purl)
	}
	return m
}

func TestRuntimeDetection(t *testing.T) {
	t.Run("vllm serve declared, version from tag", func(t *testing.T) {
		_, d := render(t, deploy("v", schemas.Container{Name: "vllm", Image: "vllm/vllm-openai:v0.19.1", Command: []string{"vllm", "serve"}, Args: []string{"Qwen/Qwen3-32B", "--tensor-parallel-size=2"}}))
		c := mustRuntime(t, d, "vllm", "0.19.1", "declared")
		if c.PURL != "pkg:pypi/vllm@0.19.1" {
			t.Errorf("purl %s", c.PURL)
		}
		if c.Evidence.Identity[0].Confidence != 1 || c.Evidence.Identity[1].Field != "version" {
			t.Errorf("evidence %+v", c.Evidence)
		}
		locs := []string{}
		for _, o := range c.Evidence.Occurrences {
			locs = append(locs, o.Location)
		}
		if !slices.Contains(locs, "spec.template.spec.containers[0].command[0]") || !slices.Contains(locs, "spec.template.spec.containers[0].image") {
			t.Errorf("occurrences %v", locs)
		}
		mustModel(t, d, "Qwen/Qwen3-32B", "huggingface", "pkg:huggingface/Qwen/Qwen3-32B")
	})
	t.Run("image only is inferred", func(t *testing.T) {
		res, d := render(t, deploy("o", schemas.Container{Name: "ollama", Image: "ollama/ollama:latest"}))
		c := mustRuntime(t, d, "ollama", "", "inferred")
		if c.Evidence.Identity[0].Confidence != 0.6 {
			t.Errorf("confidence %v", c.Evidence.Identity[0].Confidence)
		}
		if len(res.Summary.Models) != 0 {
			t.Errorf("models %v", res.Summary.Models)
		}
	})
	t.Run("args-only serve relies on the entrypoint", func(t *testing.T) {
		res, d := render(t, deploy("q", schemas.Container{Name: "vllm", Image: "vllm/vllm-openai:latest", Args: []string{"serve", "Qwen/Qwen3-235B-A22B", "--port", "8000"}}))
		mustRuntime(t, d, "vllm", "", "declared")
		if !reflect.DeepEqual(res.Summary.Models, []string{"Qwen/Qwen3-235B-A22B"}) {
			t.Errorf("models %v", res.Summary.Models)
		}
	})
	t.Run("tgi version from repository name", func(t *testing.T) {
		_, d := render(t, deploy("tgi", schemas.Container{Name: "tgi",
			Image: "us-docker.pkg.dev/deeplearning-platform-release/gcr.io/huggingface-text-generation-inference-cu121.2-0.ubuntu2204:latest",
			Env:   []schemas.EnvVar{{Name: "MODEL_ID", Value: "meta-llama/Meta-Llama-3-8B-Instruct"}, {Name: "NUM_SHARD", Value: "2"}}}))
		c := mustRuntime(t, d, "tgi", "2.0", "inferred")
		if c.prop("runtime:tensorParallelSize") != "2" {
			t.Errorf("NUM_SHARD not read: %v", c.Properties)
		}
		mustModel(t, d, "meta-llama/Meta-Llama-3-8B-Instruct", "huggingface", "pkg:huggingface/meta-llama/Meta-Llama-3-8B-Instruct")
	})
	t.Run("dynamo image tag is dynamo's version", func(t *testing.T) {
		_, d := render(t, dynamoDisagg())
		dyn := mustRuntime(t, d, "dynamo", "0.8.0", "declared")
		v := mustRuntime(t, d, "vllm", "", "declared")
		if dyn.prop("runtime:backend") != "vllm" || v.prop("runtime:wrappedBy") != "dynamo" {
			t.Errorf("backend %q wrappedBy %q", dyn.prop("runtime:backend"), v.prop("runtime:wrappedBy"))
		}
		if got := d.dependsOn(dyn.BOMRef); !slices.Contains(got, v.BOMRef) {
			t.Errorf("dynamo depends on %v", got)
		}
		if got := d.dependsOn(v.BOMRef); !reflect.DeepEqual(got, []string{"model:huggingface:qwen/qwen3-0.6b"}) {
			t.Errorf("vllm depends on %v", got)
		}
	})
	t.Run("trtllm dynamo image is not a trtllm version", func(t *testing.T) {
		_, d := render(t, deploy("t", schemas.Container{Name: "w", Image: "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.0", Command: []string{"python3", "-m", "dynamo.trtllm"}, Args: []string{"--model-path", "Qwen/Qwen3-0.6B"}}))
		mustRuntime(t, d, "dynamo", "0.8.0", "declared")
		mustRuntime(t, d, "tensorrt-llm", "", "declared")
	})
	t.Run("nim with sglang backend and image model", func(t *testing.T) {
		in := deploy("nim", schemas.Container{Name: "nim", Image: "nvcr.io/nim/deepseek-ai/deepseek-r1:1.7.3", Env: []schemas.EnvVar{{Name: "NIM_USE_SGLANG", Value: "1"}}})
		in.Workload.Kind = "NIMService"
		_, d := render(t, in)
		n := mustRuntime(t, d, "nim", "1.7.3", "declared")
		mustRuntime(t, d, "sglang", "", "declared")
		if n.prop("runtime:backend") != "sglang" {
			t.Errorf("backend %q", n.prop("runtime:backend"))
		}
		m := mustModel(t, d, "deepseek-ai/deepseek-r1", "nim-image", "")
		if m.prop("confidence") != "inferred" {
			t.Errorf("nim image model confidence %q", m.prop("confidence"))
		}
	})
	t.Run("generic nim image is no model; NIM_MODEL_NAME is", func(t *testing.T) {
		in := deploy("nim", schemas.Container{Name: "nim", Image: "nvcr.io/nim/nvidia/llm-nim:1.12", Env: []schemas.EnvVar{{Name: "NIM_MODEL_NAME", Value: "hf://meta-llama/Llama-3.2-1B-Instruct"}}})
		in.Workload.Kind = "NIMService"
		res, d := render(t, in)
		mustRuntime(t, d, "nim", "1.12", "declared")
		if !reflect.DeepEqual(res.Summary.Models, []string{"meta-llama/Llama-3.2-1B-Instruct"}) {
			t.Errorf("models %v", res.Summary.Models)
		}
	})
	kserve := func(role string, args ...string) *schemas.Inputs {
		return &schemas.Inputs{Workload: wl("InferenceService", "isvc"), Components: []schemas.Component{{
			Name: role, Locator: "spec." + role, Roles: []string{role},
			Fields: []schemas.Field{{Name: "modelFormat", Value: "huggingface", Locator: "spec." + role + ".model.modelFormat.name"},
				{Name: "storageUri", Value: "hf://meta-llama/Llama-2-7b-chat-hf", Locator: "spec." + role + ".model.storageUri"}},
			Containers: []schemas.Container{{Name: "kserve-container", Locator: "spec." + role + ".model", Args: args}},
		}}}
	}
	t.Run("kserve backend=huggingface is not vllm", func(t *testing.T) {
		_, d := render(t, kserve("predictor", "--model_name=llama2", "--model_dir=/mnt/models", "--backend=huggingface"))
		k := mustRuntime(t, d, "kserve-huggingfaceserver", "", "declared")
		noRuntime(t, d, "vllm")
		if k.prop("runtime:backend") != "huggingface" || k.prop("runtime:servedModelName") != "llama2" {
			t.Errorf("props %v", k.Properties)
		}
		if _, ok := d.model("/mnt/models"); ok {
			t.Error("/mnt/models reported as a model")
		}
		mustModel(t, d, "meta-llama/Llama-2-7b-chat-hf", "huggingface", "pkg:huggingface/meta-llama/Llama-2-7b-chat-hf")
	})
	t.Run("kserve auto backend infers vllm for a predictor only", func(t *testing.T) {
		_, d := render(t, kserve("predictor", "--model_name=llama3"))
		mustRuntime(t, d, "vllm", "", "inferred")
		_, d = render(t, kserve("transformer", "--model_name=bert"))
		noRuntime(t, d, "vllm")
		_, d = render(t, kserve("predictor", "--backend=vllm"))
		mustRuntime(t, d, "vllm", "", "declared")
	})
	t.Run("triton version from runtimeVersion field", func(t *testing.T) {
		in := &schemas.Inputs{Workload: wl("InferenceService", "t"), Components: []schemas.Component{{Name: "predictor", Locator: "spec.predictor", Roles: []string{"predictor"},
			Fields: []schemas.Field{{Name: "modelFormat", Value: "triton", Locator: "spec.predictor.model.modelFormat.name"}, {Name: "runtimeVersion", Value: "23.10-py3", Locator: "spec.predictor.model.runtimeVersion"},
				{Name: "storageUri", Value: "gs://bucket/repo", Locator: "spec.predictor.model.storageUri"}}}}}
		_, d := render(t, in)
		mustRuntime(t, d, "triton", "23.10", "declared")
		mustModel(t, d, "gs://bucket/repo", "gcs", "")
	})
	t.Run("llm-d simulator is not vllm", func(t *testing.T) {
		_, d := render(t, deploy("sim", schemas.Container{Name: "vllm-sim", Image: "ghcr.io/llm-d/llm-d-inference-sim:v0.8.2", Args: []string{"--model", "Qwen/Qwen3-32B", "--port", "8000"}}))
		noRuntime(t, d, "vllm")
		if d.Metadata.Component.prop("simulator") != "llm-d-inference-sim" || d.Metadata.Component.prop("simulator:simulates") != "vllm" {
			t.Errorf("simulator not flagged: %v", d.Metadata.Component.Properties)
		}
		m := mustModel(t, d, "Qwen/Qwen3-32B", "huggingface", "pkg:huggingface/Qwen/Qwen3-32B")
		if len(m.props("model:simulatedBy")) == 0 {
			t.Error("simulated model not flagged")
		}
	})
	t.Run("hints infer triton and trtllm", func(t *testing.T) {
		_, d := render(t, deploy("trt", schemas.Container{Name: "leader", Image: "<image>", Command: []string{"sh", "-c", "python3 ./server.py leader --triton_model_repo_dir=/tensorrtllm_backend/all_models/inflight_batcher_llm/"}}))
		mustRuntime(t, d, "triton", "", "inferred")
		mustRuntime(t, d, "tensorrt-llm", "", "inferred")
	})
}

func TestModels(t *testing.T) {
	t.Run("pinned revision from env", func(t *testing.T) {
		env := []schemas.EnvVar{{Name: "MODEL_NAME", Value: "Qwen/Qwen3-32B"}, {Name: "MODEL_REVISION", Value: "9216db5781bf21249d130ec9da846c4624c16137"}, {Name: "HF_TOKEN", From: &schemas.KeyRef{Kind: "secret", Name: "hf", Key: "t"}}}
		_, d := render(t, deploy("srv", schemas.Container{Name: "srv", Image: "vllm/vllm-openai:v0.8.5", Command: []string{"sh", "-c", "vllm serve $MODEL_NAME"}, Env: env}))
		m := mustModel(t, d, "Qwen/Qwen3-32B", "huggingface", "pkg:huggingface/Qwen/Qwen3-32B@9216db5781bf21249d130ec9da846c4624c16137")
		if m.prop("model:revision") != "9216db5781bf21249d130ec9da846c4624c16137" || m.prop("model:unpinned") != "" {
			t.Errorf("props %v", m.Properties)
		}
		// The same pin in a Job that only downloads: it serves nothing.
		in := deploy("dl", schemas.Container{Name: "dl", Image: "python:3.10-slim", Command: []string{"sh", "-c", "hf download $MODEL_NAME --revision $MODEL_REVISION"}, Env: env})
		in.Workload.Kind = "Job"
		if res, d := render(t, in); res.BOM != nil || res.Skipped != SkipNothing {
			t.Errorf("a download job got a BOM: %v", d)
		}
	})
	t.Run("revision flag", func(t *testing.T) {
		_, d := render(t, deploy("r", schemas.Container{Name: "v", Image: "vllm/vllm-openai:v0.8.5", Command: []string{"vllm", "serve", "org/m", "--revision", "abc123"}}))
		mustModel(t, d, "org/m", "huggingface", "pkg:huggingface/org/m@abc123")
	})
	t.Run("locations", func(t *testing.T) {
		for _, tc := range []struct{ value, name, kind, purl string }{
			{"hf://org/name", "org/name", "huggingface", "pkg:huggingface/org/name"},
			{"https://huggingface.co/ttt421/lora.git", "ttt421/lora", "huggingface", "pkg:huggingface/ttt421/lora"},
			{"/llm-folder", "/llm-folder", "path", ""},
			{"/var/mdl/YOUR-MODEL-PATH", "/var/mdl/YOUR-MODEL-PATH", "path", ""},
			{"pvc://s3-data/llama", "pvc://s3-data/llama", "pvc", ""},
			{"s3://b/k", "s3://b/k", "s3", ""},
			{"oci://r/m:1", "oci://r/m:1", "oci", "pkg:oci/m?repository_url=docker.io/r/m&tag=1"},
			{"oci://quay.io/org/m@sha256:" + strings.Repeat("ab", 32), "oci://quay.io/org/m@sha256:" + strings.Repeat("ab", 32), "oci", "pkg:oci/m@sha256%3A" + strings.Repeat("ab", 32) + "?repository_url=quay.io/org/m"},
			{"s3://anonymous@b/k/*", "s3://b/k/*", "s3", ""},
			{"hf://org/name:0123abc", "org/name", "huggingface", "pkg:huggingface/org/name@0123abc"},
			{"huggingface://TheBloke/phi-2-GGUF/phi-2.Q8_0.gguf", "TheBloke/phi-2-GGUF", "huggingface", "pkg:huggingface/TheBloke/phi-2-GGUF"},
			{"gs://kfserving-examples/models/sklearn/1.0/model", "gs://kfserving-examples/models/sklearn/1.0/model", "gcs", ""},
		} {
			_, d := render(t, deploy("m", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.8.5", Command: []string{"vllm", "serve"}, Args: []string{"--model", tc.value}}))
			m := mustModel(t, d, tc.name, tc.kind, tc.purl)
			pinned := strings.Contains(tc.purl, "@")
			if pinned == (m.prop("model:unpinned") != "") {
				t.Errorf("%s: pinned %v, unpinned property %q", tc.value, pinned, m.prop("model:unpinned"))
			}
		}
	})
	t.Run("not models", func(t *testing.T) {
		in := deploy("n", schemas.Container{Name: "c", Image: "kserve/vllmserver:latest", Command: []string{"python", "-m", "vllm.entrypoints.openai.api_server"},
			Args: []string{"--model=/mnt/models", "--served-model-name={{.Name}}"}})
		in.Components[0].Labels = map[string]string{"model": "prefill", "llm-d.ai/model": "Qwen3-32B"}
		res, d := render(t, in)
		if len(res.Summary.Models) != 0 {
			t.Errorf("models %v", res.Summary.Models)
		}
		if c := mustRuntime(t, d, "vllm", "", "declared"); c.prop("runtime:servedModelName") != "{{.Name}}" {
			t.Logf("served name %q", c.prop("runtime:servedModelName"))
		}
	})
	t.Run("one model, many roles", func(t *testing.T) {
		res, d := render(t, dynamoDisagg())
		if !reflect.DeepEqual(res.Summary.Models, []string{"Qwen/Qwen3-0.6B"}) {
			t.Fatalf("models %v", res.Summary.Models)
		}
		m, _ := d.model("Qwen/Qwen3-0.6B")
		if got := m.props("role"); !reflect.DeepEqual(got, []string{"decode", "prefill", "worker"}) {
			t.Errorf("roles %v", got)
		}
		if len(m.Evidence.Occurrences) != 2 {
			t.Errorf("occurrences %+v", m.Evidence.Occurrences)
		}
	})
	t.Run("unresolved reference", func(t *testing.T) {
		_, d := render(t, deploy("u", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.8.5", Command: []string{"vllm", "serve"}, Args: []string{"--model", "$(SECRET_MODEL)"}}))
		m := mustModel(t, d, "$(SECRET_MODEL)", "unresolved", "")
		if m.prop("confidence") != "unresolved" || m.Evidence.Identity[0].Confidence != 0.2 {
			t.Errorf("confidence %q %v", m.prop("confidence"), m.Evidence.Identity[0].Confidence)
		}
	})
}

func TestRolesAndSettings(t *testing.T) {
	c := func(args ...string) schemas.Container {
		return schemas.Container{Name: "c", Image: "lmsysorg/sglang:v0.4.6", Command: []string{"python3", "-m", "sglang.launch_server"}, Args: args}
	}
	for _, tc := range []struct {
		name string
		args []string
		role string
	}{
		{"disaggregation-mode", []string{"--disaggregation-mode", "decode"}, "decode"},
		{"is-prefill-worker", []string{"--is-prefill-worker"}, "prefill"},
		{"kv-role-json", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`}, "prefill"},
	} {
		res, _ := render(t, deploy(tc.name, c(tc.args...)))
		if !slices.Contains(res.Summary.Roles, tc.role) {
			t.Errorf("%s: roles %v, want %s", tc.name, res.Summary.Roles, tc.role)
		}
	}
	in := deploy("s", c("--model-path", "m/x", "--tp", "4", "--pipeline_parallel_size", "2", "--quantization", "fp8", "--context-length", "32768", "--served-model-name", "x", "--lora-modules", "a=/p/a"))
	in.Components[0].Containers[0].Env = []schemas.EnvVar{{Name: "VLLM_ADDITIONAL_ARGS", Value: `--kv_transfer_config '{"kv_role":"kv_consumer"}'`}}
	res, d := render(t, in)
	rt := mustRuntime(t, d, "sglang", "0.4.6", "declared")
	for k, v := range map[string]string{"tensorParallelSize": "4", "pipelineParallelSize": "2", "quantization": "fp8", "maxModelLen": "32768", "servedModelName": "x", "loraAdapters": "a=/p/a"} {
		if got := rt.prop("runtime:" + k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !slices.Contains(res.Summary.Roles, "decode") {
		t.Errorf("kv_consumer in VLLM_ADDITIONAL_ARGS: roles %v", res.Summary.Roles)
	}
	// Labels like role: leader on a redis pod are not roles, and nginx/redis give no BOM.
	redis := deploy("redis", schemas.Container{Name: "leader", Image: "docker.io/redis:6.0.5"})
	redis.Components[0].Labels = map[string]string{"role": "leader", "tier": "backend"}
	if res, _ := render(t, redis); res.BOM != nil || res.Skipped != SkipNothing {
		t.Errorf("redis: %q %s", res.Skipped, res.BOM)
	}
}

func TestSecretsNeverEchoed(t *testing.T) {
	in := deploy("s", schemas.Container{Name: "c", Image: "vllm/vllm-openai:v0.8.5",
		Command: []string{"sh", "-c", "vllm serve org/m --api-key REDACTED --hf-token REDACTED --tp $HIDDEN"},
		Env: []schemas.EnvVar{
			{Name: "HF_TOKEN", Redacted: true},
			{Name: "HF_TOKEN_FROM_SECRET", From: &schemas.KeyRef{Kind: "secret", Name: "hf-secret-name", Key: "token"}},
			{Name: "MODEL_ID", Value: "org/m"},
			// A value that is marked redacted must never be used even if present.
			{Name: "QUANTIZE", Value: "hf_leakedvalue", Redacted: true},
		},
		EnvFrom: []schemas.EnvSource{{Kind: "secret", Name: "creds"}}})
	res, _ := render(t, in)
	for _, bad := range []string{"hf_leakedvalue", "REDACTED", "hf-secret-name", "creds", "$HIDDEN"} {
		if bytes.Contains(res.BOM, []byte(bad)) {
			t.Errorf("BOM contains %q", bad)
		}
	}
}

func TestSkips(t *testing.T) {
	r := newRenderer(t)
	res, err := r.Render(schemas.NewDeleted("src", eventTime, wl("Deployment", "gone")))
	if err != nil || res.BOM != nil || res.Skipped != SkipTombstone {
		t.Errorf("tombstone: %+v %v", res, err)
	}
	res, _ = render(t, deploy("nginx", schemas.Container{Name: "nginx", Image: "nginx:1.15"}))
	if res.BOM != nil || res.Skipped != SkipNothing || res.BomHash != "" {
		t.Errorf("nginx: %+v", res)
	}
	tpl := deploy("rt", schemas.Container{Name: "kserve-container", Image: "vllmserver:replace", Command: []string{"python", "-m", "vllm.entrypoints.openai.api_server"}})
	tpl.Workload.Kind = "ClusterServingRuntime"
	if res, _ := render(t, tpl); res.BOM != nil || res.Skipped != SkipTemplate {
		t.Errorf("template: %+v", res)
	}
	cache := deploy("c", schemas.Container{Name: "puller", Image: "nvcr.io/nim/nvidia/llm-nim:1.12"})
	cache.Workload.Kind = "NIMCache"
	cache.Fields = []schemas.Field{{Name: "hfNamespace", Value: "meta-llama", Locator: "spec.source.hf.namespace"}, {Name: "hfModelName", Value: "Llama-3.2-1B-Instruct", Locator: "spec.source.hf.modelName"}}
	// A cache serves nothing: the NIMService that names it takes its model.
	if res, _ := render(t, cache); res.BOM != nil || res.Skipped != SkipCache {
		t.Errorf("nimcache: %+v", res)
	}
	if _, err := r.Render(schemas.WorkloadChange{Type: schemas.TypeObserved}); err == nil {
		t.Error("observed event without inputs rendered")
	}
}

func TestContainersAndMetadata(t *testing.T) {
	dg := "sha256:" + strings.Repeat("1f", 32)
	in := deploy("c",
		schemas.Container{Name: "vllm", Image: "vllm/vllm-openai:v0.8.5", Command: []string{"vllm", "serve", "org/m"}},
		schemas.Container{Name: "patch", Command: []string{"vllm", "serve", "org/m"}},
		schemas.Container{Name: "bad", Image: "REPLACE_ROUTING_SIDECAR_IMAGE"},
		schemas.Container{Name: "sidecar", Image: "busybox"},
	)
	in.Digests = []schemas.ImageDigest{{Image: "vllm/vllm-openai:v0.8.5", Digest: "docker-pullable://vllm/vllm-openai@" + dg}}
	res, d := render(t, in)
	var vc, bad, bb docComp
	for _, c := range d.byType("container") {
		switch c.Name {
		case "docker.io/vllm/vllm-openai":
			vc = c
		case "REPLACE_ROUTING_SIDECAR_IMAGE":
			bad = c
		case "docker.io/library/busybox":
			bb = c
		}
	}
	if vc.PURL != "pkg:oci/vllm-openai@sha256%3A"+strings.Repeat("1f", 32)+"?repository_url=docker.io/vllm/vllm-openai&tag=v0.8.5" || len(vc.Hashes) != 1 || vc.Hashes[0].Content != strings.Repeat("1f", 32) || vc.Version != dg {
		t.Errorf("resolved container: %+v", vc)
	}
	if bad.prop("image:unresolved") != "true" || bad.PURL != "" || bad.prop("confidence") != "unresolved" {
		t.Errorf("unresolved image: %+v", bad)
	}
	if bb.prop("image:digest") != "unresolved" {
		t.Errorf("busybox digest: %+v", bb)
	}
	if got := d.Metadata.Component.prop("image:unknown"); got != "spec.template.spec.containers[1]" {
		t.Errorf("image-less container note %q", got)
	}
	mc := d.Metadata.Component
	if mc.Type != "application" || mc.Name != "c" || mc.prop("cluster") != "dev" || mc.prop("kind") != "Deployment" || mc.prop("uid") != "uid-c" ||
		mc.prop("namespace") != "ml" || mc.prop("apiVersion") != "apps/v1" || !strings.HasPrefix(mc.prop("inputHash"), "sha256:") {
		t.Errorf("metadata component %+v", mc)
	}
	if d.SpecVersion != "1.6" || d.Metadata.Timestamp != "2026-11-30T01:02:03Z" || d.Metadata.Tools.Components[0].Version != "test" {
		t.Errorf("header %+v", d)
	}
	if !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(d.SerialNumber) {
		t.Errorf("serial %s", d.SerialNumber)
	}
	if res.BomHash != schemas.BomHash(res.BOM) {
		t.Error("BomHash is not the hash of BOM")
	}
	// Another transformer version gives another serial number.
	r2, _ := NewRenderer(Config{Version: "other"})
	res2, _ := r2.Render(event(t, in))
	if res2.BomHash == res.BomHash {
		t.Error("transformer version does not reach the BOM")
	}
}

func TestDeterminism(t *testing.T) {
	for _, in := range []*schemas.Inputs{dynamoDisagg(), lwsVLLM()} {
		a, _ := render(t, in)
		b, _ := render(t, in)
		if !bytes.Equal(a.BOM, b.BOM) || a.BomHash != b.BomHash {
			t.Fatal("two renders differ")
		}
	}
	mk := func(order []int) *schemas.Inputs {
		in := dynamoDisagg()
		ds := []schemas.ImageDigest{
			{Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0", Digest: "sha256:" + strings.Repeat("a", 64)},
			{Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0", Digest: "sha256:" + strings.Repeat("b", 64)},
			{Image: "other:1", Digest: "sha256:" + strings.Repeat("c", 64)},
		}
		for _, i := range order {
			in.Digests = append(in.Digests, ds[i])
		}
		return in
	}
	r := newRenderer(t)
	// Same event time and input hash, digests in another order.
	ev1, ev2 := event(t, mk([]int{0, 1, 2})), event(t, mk([]int{2, 1, 0}))
	ev2.Data.InputHash = ev1.Data.InputHash
	a, _ := r.Render(ev1)
	b, _ := r.Render(ev2)
	if !bytes.Equal(a.BOM, b.BOM) {
		t.Error("digest order changed the BOM")
	}
}

func TestBadInput(t *testing.T) {
	huge := make([]string, 0, 1<<15)
	for range 1 << 15 {
		huge = append(huge, "--model", "org/m"+strings.Repeat("x", 24))
	}
	in := deploy("huge",
		schemas.Container{Name: "a", Image: "vllm/vllm-openai:v0.8.5", Command: []string{"vllm", "serve"}, Args: huge},
		schemas.Container{Name: "b", Image: "${IMAGE}", Command: []string{"bash", "-c", strings.Repeat("'\"$(${", 1<<16)}},
		schemas.Container{Name: "c", Image: "::", Env: []schemas.EnvVar{{Name: "", Value: "x"}, {Name: "MODEL_ID", Value: "\x00\xff"}, {Name: "NUM_SHARD", Value: strings.Repeat("9", 1<<10)}}},
	)
	res, d := render(t, in)
	mustRuntime(t, d, "vllm", "0.8.5", "declared")
	if len(res.Summary.Models) < 2 {
		t.Errorf("models %d", len(res.Summary.Models))
	}
	for _, c := range d.byType("container") {
		if c.Name == "${IMAGE}" && c.prop("image:unresolved") != "true" {
			t.Errorf("placeholder image %+v", c)
		}
	}
}

func TestRulesOverride(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yaml")
	body := `runtimes:
  - name: myengine
    title: My Engine
    images: [{pattern: '(^|/)acme/engine$'}]
    commands: [{pattern: '^engine run( |$)', model: positional}]
    subcommands: [run]
  - name: ollama
    title: Ollama (patched)
    images: [{pattern: '(^|/)ollama/ollama$'}]
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer(Config{Version: "x", RulesFile: file})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Render(event(t, deploy("e", schemas.Container{Name: "e", Image: "acme/engine:v1.2.3", Command: []string{"engine", "run", "org/model"}})))
	if err != nil || len(res.Summary.Runtimes) != 1 || res.Summary.Runtimes[0] != (RuntimeSummary{Name: "myengine", Version: "1.2.3", Confidence: "declared"}) ||
		!reflect.DeepEqual(res.Summary.Models, []string{"org/model"}) {
		t.Errorf("custom runtime: %+v %v", res.Summary, err)
	}
	res, _ = r.Render(event(t, deploy("o", schemas.Container{Name: "o", Image: "ollama/ollama:latest"})))
	if !bytes.Contains(res.BOM, []byte("Ollama (patched)")) {
		t.Error("override did not replace the built-in ollama rule")
	}
	for name, bad := range map[string]string{
		"regex":      "runtimes: [{name: x, images: [{pattern: '('}]}]",
		"unknown":    "runtimes: [{name: x, bogus: 1}]",
		"confidence": "runtimes: [{name: x, kinds: [{kind: K, confidence: maybe}]}]",
		"wraps":      "runtimes: [{name: x, wraps: [nothing]}]",
	} {
		f := filepath.Join(dir, name+".yaml")
		os.WriteFile(f, []byte(bad), 0o600)
		if _, err := NewRenderer(Config{RulesFile: f}); err == nil {
			t.Errorf("%s: bad rules accepted", name)
		}
	}
	if err := (Config{RulesFile: filepath.Join(dir, "missing.yaml")}).Validate(); err == nil || !strings.Contains(err.Error(), "RulesFile") {
		t.Errorf("missing rules file: %v", err)
	}
}

func TestConcurrentRender(t *testing.T) {
	r := newRenderer(t)
	ev := event(t, lwsVLLM())
	want, _ := r.Render(ev)
	done := make(chan []byte)
	for range 8 {
		go func() {
			res, _ := r.Render(ev)
			done <- res.BOM
		}()
	}
	for range 8 {
		if got := <-done; !bytes.Equal(got, want.BOM) {
			t.Fatal("concurrent renders differ")
		}
	}
}

// TestRenderKeepsNothingBetweenRenders: a Renderer lends each render
// scratch space from pools (detectRoom, the builder's state), and a
// component may take its first container's lists. Every workload of the
// project's manifests, rendered by a Renderer that rendered all the others
// first (in reverse order, from four goroutines at once), gives the bytes a
// Renderer of its own gives it.
func TestRenderKeepsNothingBetweenRenders(t *testing.T) {
	own := renderTree(t, filepath.Join("testdata", "manifests"))
	if len(own) < 50 {
		t.Fatalf("only %d workloads rendered", len(own))
	}
	evs := make([]schemas.WorkloadChange, len(own))
	for i := range own {
		evs[i] = event(t, own[i].inputs)
	}
	shared := newRenderer(t)
	for i := range slices.Backward(own) { // warm its pools on every other shape
		if _, err := shared.Render(evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	type got struct {
		i   int
		bom []byte
		err error
	}
	out := make(chan got)
	for g := range 4 {
		go func() {
			for i := g; i < len(own); i += 4 {
				res, err := shared.Render(evs[i])
				out <- got{i, res.BOM, err}
			}
		}()
	}
	for range own {
		r := <-out
		if r.err != nil {
			t.Errorf("%s: %v", own[r.i].rel, r.err)
			continue
		}
		fresh, err := newRenderer(t).Render(evs[r.i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.bom, fresh.BOM) {
			t.Errorf("%s %s: a used Renderer gives other bytes than a fresh one", own[r.i].rel, own[r.i].inputs.Workload.Key())
		}
	}
}
