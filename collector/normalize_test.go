package collector

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
)

func newNormalizer(t testing.TB, cfg Config) *Normalizer {
	t.Helper()
	n, err := NewNormalizer(cfg)
	if err != nil {
		t.Fatalf("NewNormalizer: %v", err)
	}
	return n
}

// outcome is what normalizing one testdata document gave.
type outcome struct {
	in  *schemas.Inputs
	err error
}

// normalizeFile normalizes every document of a testdata file, by name.
func normalizeFile(t *testing.T, n *Normalizer, file string) map[string]outcome {
	t.Helper()
	objs, err := manifest.ReadPath("testdata/" + file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	out := map[string]outcome{}
	for _, o := range objs {
		name := o.Obj["metadata"].(map[string]any)["name"].(string)
		in, err := n.Normalize(o.Obj, "file:"+file)
		out[name] = outcome{in, err}
	}
	return out
}

func must(t *testing.T, got map[string]outcome, name string) *schemas.Inputs {
	t.Helper()
	o, ok := got[name]
	if !ok {
		t.Fatalf("no document named %s", name)
	}
	if o.err != nil {
		t.Fatalf("%s: %v", name, o.err)
	}
	return o.in
}

// shape summarizes components as "name [roles] @locator" and containers as
// "  name init? image @locator", one per line, for readable comparisons.
func shape(in *schemas.Inputs) string {
	var b strings.Builder
	for _, c := range in.Components {
		fmt.Fprintf(&b, "%s %v @%s\n", c.Name, c.Roles, c.Locator)
		for _, ct := range c.Containers {
			init := ""
			if ct.Init {
				init = " init"
			}
			fmt.Fprintf(&b, "  %s%s %q @%s\n", ct.Name, init, ct.Image, ct.Locator)
		}
	}
	return b.String()
}

func fields(fs []schemas.Field) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Name+"="+f.Value+"@"+f.Locator)
	}
	return strings.Join(parts, " ")
}

func wantShape(t *testing.T, name string, in *schemas.Inputs, want string) {
	t.Helper()
	want = strings.TrimLeft(want, "\n")
	if got := shape(in); got != want {
		t.Errorf("%s shape:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestNormalizeCoreKinds(t *testing.T) {
	got := normalizeFile(t, newNormalizer(t, Config{Cluster: "prod"}), "core.yaml")

	in := must(t, got, "chat")
	wantW := schemas.Workload{Cluster: "prod", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "chat", UID: "0b5c2f1e-1111-4222-8333-944455556666"}
	if in.Workload != wantW {
		t.Errorf("workload = %+v, want %+v", in.Workload, wantW)
	}
	if in.Source != "file:core.yaml" {
		t.Errorf("source = %q", in.Source)
	}
	wantShape(t, "chat", in, `
chat [] @spec.template
  server "vllm/vllm-openai:v0.9.0" @spec.template.spec.containers[0]
  metrics "exporter:2" @spec.template.spec.containers[1]
  fetch init "busybox:1.36" @spec.template.spec.initContainers[0]
  proxy init "proxy:v1" @spec.template.spec.initContainers[1]
`)
	c := in.Components[0]
	if !reflect.DeepEqual(c.Labels, map[string]string{"llm-d.ai/role": "decode"}) {
		t.Errorf("labels = %v", c.Labels)
	}
	server := c.Containers[0]
	if !reflect.DeepEqual(server.Command, []string{"vllm", "serve"}) ||
		!reflect.DeepEqual(server.Args, []string{"org/model-a", "--port", "8000", "--enforce-eager", "true"}) {
		t.Errorf("command/args = %q %q", server.Command, server.Args)
	}
	wantEnv := []schemas.EnvVar{{Name: "MODEL_ID", Value: "org/model-a"}, {Name: "PORT", Redacted: true}}
	if !reflect.DeepEqual(server.Env, wantEnv) {
		t.Errorf("env = %+v, want %+v", server.Env, wantEnv)
	}

	wantShape(t, "download", must(t, got, "download"), `
download [] @spec.template
  dl "python:3.12" @spec.template.spec.containers[0]
`)
	wantShape(t, "nightly-eval", must(t, got, "nightly-eval"), `
nightly-eval [] @spec.jobTemplate.spec.template
  eval "eval:1" @spec.jobTemplate.spec.template.spec.containers[0]
`)
	lone := must(t, got, "lone")
	wantShape(t, "lone", lone, `
lone [] @spec
  c "nginx:1" @spec.containers[0]
`)
	if !reflect.DeepEqual(lone.Components[0].Labels, map[string]string{"app.kubernetes.io/component": "server"}) {
		t.Errorf("pod labels = %v", lone.Components[0].Labels)
	}
	if lone.Workload.Namespace != "default" {
		t.Errorf("namespace = %q, want the default", lone.Workload.Namespace)
	}
	must(t, got, "sts")
	must(t, got, "ds")

	rs := got["chat-7d9f"]
	if !errors.Is(rs.err, ErrNotWorkload) || !strings.Contains(rs.err.Error(), "default/ReplicaSet/chat-7d9f: owned by apps/v1 Deployment chat, rolled up") {
		t.Errorf("replicaset err = %v", rs.err)
	}
	// an owner of an unknown kind does not hide the object
	must(t, got, "orphan")
}

func TestNormalizeDerivedUID(t *testing.T) {
	n := newNormalizer(t, Config{})
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"template": map[string]any{}},
	}
	in, err := n.Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	// printf default/shop/Deployment/web | sha256sum | cut -c1-32
	if want := "6ab3c835b99e1fa9be19c24af141f18c"; in.Workload.UID != want {
		t.Errorf("uid = %s, want %s", in.Workload.UID, want)
	}
	obj["metadata"].(map[string]any)["uid"] = "bad uid/../x"
	if _, err := n.Normalize(obj, "cluster"); err == nil || errors.Is(err, ErrNotWorkload) {
		t.Errorf("invalid uid: err = %v", err)
	}
}

func TestNormalizeDynamo(t *testing.T) {
	got := normalizeFile(t, newNormalizer(t, Config{}), "dynamo.yaml")

	a := must(t, got, "graph-a")
	wantShape(t, "graph-a", a, `
DecodePool [worker decode] @spec.services.DecodePool
  engine "dyn/runtime:1" @spec.services.DecodePool.extraPodSpec.mainContainer
PrefillPool [worker prefill] @spec.services.PrefillPool
  main "dyn/runtime:1" @spec.services.PrefillPool.extraPodSpec.mainContainer
  helper "helper:1" @spec.services.PrefillPool.extraPodSpec.containers[0]
Router [frontend] @spec.services.Router
  main "dyn/runtime:1" @spec.services.Router.extraPodSpec.mainContainer
`)
	if f := fields(a.Fields); f != "backendFramework=sglang@spec.backendFramework" {
		t.Errorf("workload fields = %s", f)
	}
	pf := a.Components[1]
	if f := fields(pf.Fields); f != "componentType=worker@spec.services.PrefillPool.componentType nodeCount=2@spec.services.PrefillPool.multinode.nodeCount subComponentType=prefill@spec.services.PrefillPool.subComponentType" {
		t.Errorf("prefill fields = %s", f)
	}
	for _, ct := range pf.Containers {
		if !reflect.DeepEqual(ct.EnvFrom, []schemas.EnvSource{{Kind: "secret", Name: "model-hub-creds"}}) {
			t.Errorf("%s envFrom = %+v", ct.Name, ct.EnvFrom)
		}
	}

	b := must(t, got, "graph-b")
	wantShape(t, "graph-b", b, `
Entry [frontend] @spec.components[0]
  main "dyn/runtime:2" @spec.components[0].podTemplate.spec.containers[0]
Work [worker] @spec.components[1]
  main "dyn/runtime:2" @spec.components[1].podTemplate.spec.containers[0]
  warm init "warm:1" @spec.components[1].podTemplate.spec.initContainers[0]
`)
	work := b.Components[1]
	if f := fields(work.Fields); f != "componentType=worker@spec.components[1].type" {
		t.Errorf("work fields = %s", f)
	}
	wantFrom := []schemas.EnvSource{{Kind: "secret", Name: "hub-token"}, {Kind: "configMap", Name: "tuning", Prefix: "T_"}}
	if !reflect.DeepEqual(work.Containers[0].EnvFrom, wantFrom) {
		t.Errorf("envFrom = %+v", work.Containers[0].EnvFrom)
	}
	if !reflect.DeepEqual(work.Labels, map[string]string{"llm-d.ai/model": "model-c"}) {
		t.Errorf("labels = %v", work.Labels)
	}

	dcd := must(t, got, "lone-worker")
	wantShape(t, "lone-worker", dcd, `
lone-worker [worker] @spec
  main "dyn/trt:1" @spec.podTemplate.spec.containers[0]
`)
	if f := fields(dcd.Fields); f != "backendFramework=trtllm@spec.backendFramework" {
		t.Errorf("dcd fields = %s", f)
	}
	if err := got["graph-b-work"].err; !errors.Is(err, ErrNotWorkload) {
		t.Errorf("owned dcd err = %v", err)
	}
}

func TestNormalizeLWSAndDisaggregatedSet(t *testing.T) {
	got := normalizeFile(t, newNormalizer(t, Config{}), "lws.yaml")
	big := must(t, got, "big")
	wantShape(t, "big", big, `
leader [leader] @spec.leaderWorkerTemplate.leaderTemplate
  lead "engine:1" @spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]
worker [worker] @spec.leaderWorkerTemplate.workerTemplate
  work "engine:1" @spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]
`)
	if cmd := big.Components[0].Containers[0].Command[2]; cmd != "serve --model org/model-d --hf-token REDACTED" {
		t.Errorf("leader script = %q", cmd)
	}
	pd := must(t, got, "pd")
	wantShape(t, "pd", pd, `
prefill [prefill] @spec.roles[0].spec.leaderWorkerTemplate.workerTemplate
  ms "ms:1" @spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]
decode-leader [decode leader] @spec.roles[1].spec.leaderWorkerTemplate.leaderTemplate
  ms-lead "ms:1" @spec.roles[1].spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]
decode [decode worker] @spec.roles[1].spec.leaderWorkerTemplate.workerTemplate
  ms "ms:1" @spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]
  sidecar init "side:1" @spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.initContainers[0]
`)
}

func TestNormalizeKServe(t *testing.T) {
	got := normalizeFile(t, newNormalizer(t, Config{}), "kserve.yaml")
	llm := must(t, got, "isvc-llm")
	wantShape(t, "isvc-llm", llm, `
predictor [predictor] @spec.predictor
  kserve-container "" @spec.predictor.model
transformer [transformer] @spec.transformer
  kserve-container "tx:1" @spec.transformer.containers[0]
explainer [explainer] @spec.explainer
  explain "ex:1" @spec.explainer.containers[0]
`)
	if f := fields(llm.Components[0].Fields); f != "modelFormat=huggingface@spec.predictor.model.modelFormat.name runtime=my-runtime@spec.predictor.model.runtime runtimeVersion=0.15@spec.predictor.model.runtimeVersion storageUri=hf://org/model-f@spec.predictor.model.storageUri" {
		t.Errorf("predictor fields = %s", f)
	}
	model := llm.Components[0].Containers[0]
	if !reflect.DeepEqual(model.Args, []string{"--model_name=f"}) {
		t.Errorf("model args = %q", model.Args)
	}
	wantEnv := []schemas.EnvVar{{Name: "HF_TOKEN", From: &schemas.KeyRef{Kind: "secret", Name: "hf", Key: "token"}}}
	if !reflect.DeepEqual(model.Env, wantEnv) {
		t.Errorf("model env = %+v", model.Env)
	}

	legacy := must(t, got, "isvc-legacy")
	wantShape(t, "isvc-legacy", legacy, `
predictor [predictor] @spec.predictor
  kserve-container "" @spec.predictor.xgboost
`)
	if f := fields(legacy.Components[0].Fields); f != "modelFormat=xgboost@spec.predictor.xgboost runtimeVersion=1.7@spec.predictor.xgboost.runtimeVersion storageUri=gs://bucket/model@spec.predictor.xgboost.storageUri" {
		t.Errorf("legacy fields = %s", f)
	}
	wantShape(t, "isvc-custom", must(t, got, "isvc-custom"), `
predictor [predictor] @spec.predictor
  kserve-container "custom:1" @spec.predictor.containers[0]
`)

	pd := must(t, got, "llm-pd")
	wantShape(t, "llm-pd", pd, `
main [decode] @spec.template
  main "eng:1" @spec.template.containers[0]
worker [worker decode] @spec.worker
  main "eng:1" @spec.worker.containers[0]
prefill [prefill] @spec.prefill.template
  main "eng:1" @spec.prefill.template.containers[0]
`)
	if f := fields(pd.Fields); f != "modelName=org/model-h@spec.model.name modelUri=hf://org/model-h@spec.model.uri" {
		t.Errorf("llmisvc fields = %s", f)
	}
	wantShape(t, "llm-single", must(t, got, "llm-single"), `
main [serving] @spec.template
  main "" @spec.template.containers[0]
`)

	for _, name := range []string{"rt", "crt"} {
		err := got[name].err
		if !errors.Is(err, ErrNotWorkload) || !strings.Contains(err.Error(), "runtime template, not a workload") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestNormalizeOperators(t *testing.T) {
	got := normalizeFile(t, newNormalizer(t, Config{}), "operators.yaml")
	nim := must(t, got, "nim-a")
	wantShape(t, "nim-a", nim, `
service [service] @spec
  nim "nvcr.io/nim/org/model-j:2.0.1" @spec.image
`)
	if f := fields(nim.Fields); f != "nimCache=cache-j@spec.storage.nimCache.name pipelineParallelSize=2@spec.multiNode.parallelism.pipeline tensorParallelSize=4@spec.multiNode.parallelism.tensor" {
		t.Errorf("nim fields = %s", f)
	}
	wantEnv := []schemas.EnvVar{{Name: "NIM_MODEL_NAME", Value: "hf://org/model-j"}, {Name: "NGC_API_KEY", Redacted: true}}
	if !reflect.DeepEqual(nim.Components[0].Containers[0].Env, wantEnv) {
		t.Errorf("nim env = %+v", nim.Components[0].Containers[0].Env)
	}

	cj := must(t, got, "cache-j")
	wantShape(t, "cache-j", cj, `
cache [cache] @spec
  model-puller "nvcr.io/nim/org/model-j:2.0.1" @spec.source.ngc.modelPuller
`)
	if f := fields(cj.Fields); f != "ngcModelEngine=vllm@spec.source.ngc.model.engine" {
		t.Errorf("cache-j fields = %s", f)
	}
	ck := must(t, got, "cache-k")
	wantShape(t, "cache-k", ck, `
cache [cache] @spec
  model-puller "nvcr.io/nim/nvidia/llm-nim:2" @spec.source.hf.modelPuller
`)
	if f := fields(ck.Fields); f != "hfEndpoint=https://huggingface.co@spec.source.hf.endpoint hfModelName=model-k@spec.source.hf.modelName hfNamespace=org@spec.source.hf.namespace" {
		t.Errorf("cache-k fields = %s", f)
	}

	rt := must(t, got, "rt-l")
	wantShape(t, "rt-l", rt, `
vllm [] @spec
  vllm "ghcr.io/vllm/engine:1" @spec.deploymentConfig.image
`)
	if f := fields(rt.Fields); f != "dtype=float16@spec.model.dtype enableLoRA=false@spec.model.enableLoRA maxLoras=0@spec.vllmConfig.maxLoras maxModelLen=8192@spec.model.maxModelLen modelURL=org/model-l@spec.model.modelURL tensorParallelSize=2@spec.vllmConfig.tensorParallelSize" {
		t.Errorf("vllmruntime fields = %s", f)
	}
	wantEnv = []schemas.EnvVar{{Name: "MAX_MODEL_LEN", Value: "8192"}, {Name: "OTHER", Redacted: true}}
	if !reflect.DeepEqual(rt.Components[0].Containers[0].Env, wantEnv) {
		t.Errorf("vllmruntime env = %+v", rt.Components[0].Containers[0].Env)
	}

	// the sidecar appears when enabled
	objs, err := manifest.ReadPath("testdata/operators.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := objs[3].Obj
	obj["spec"].(map[string]any)["deploymentConfig"].(map[string]any)["sidecarConfig"].(map[string]any)["enabled"] = true
	in, err := newNormalizer(t, Config{}).Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	wantShape(t, "rt-l with sidecar", in, `
vllm [] @spec
  vllm "ghcr.io/vllm/engine:1" @spec.deploymentConfig.image
  sidecar "ghcr.io/side:1" @spec.deploymentConfig.sidecarConfig.image
`)
}

func TestNormalizeUnknownAndIgnored(t *testing.T) {
	n := newNormalizer(t, Config{})
	_, err := n.Normalize(map[string]any{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": map[string]any{"name": "bar", "namespace": "ml"}}, "cluster")
	if !errors.Is(err, ErrUnknownKind) || err.Error() != "ml/Foo/bar: unknown kind example.com/v1 Foo (it holds no pod template, container, engine or model field)" {
		t.Errorf("unknown kind err = %v", err)
	}
	// group must match exactly
	_, err = n.Normalize(map[string]any{"apiVersion": "apps.example.com/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}}, "cluster")
	if !errors.Is(err, ErrUnknownKind) {
		t.Errorf("other group err = %v", err)
	}
	// a version the profile does not list
	_, err = n.Normalize(map[string]any{"apiVersion": "nvidia.com/v9", "kind": "DynamoGraphDeployment", "metadata": map[string]any{"name": "g"}}, "cluster")
	if !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown version err = %v", err)
	}
	for _, kind := range []string{"Service", "ConfigMap", "Secret", "Namespace"} {
		_, err := n.Normalize(map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "x"}}, "cluster")
		if !errors.Is(err, ErrNotWorkload) {
			t.Errorf("%s: err = %v", kind, err)
		}
	}
	_, err = n.Normalize(map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}}, "cluster")
	if !errors.Is(err, ErrNotWorkload) {
		t.Errorf("RuntimeClass err = %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Cluster: "a.b"}, "Cluster"},
		{Config{DefaultNamespace: "Not_Valid"}, "DefaultNamespace"},
		{Config{EnvAllow: []string{""}}, "EnvAllow[0]"},
		{Config{LabelAllow: []string{"a b"}}, "LabelAllow[0]"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: err = %v, want one naming %s", tc.cfg, err, tc.field)
		}
		if _, err := NewNormalizer(tc.cfg); err == nil {
			t.Errorf("NewNormalizer(%+v) accepted an invalid config", tc.cfg)
		}
	}
}

func TestConfigAllowLists(t *testing.T) {
	n := newNormalizer(t, Config{EnvAllow: []string{"MY_MODEL"}, LabelAllow: []string{"team"}})
	obj := deployment(map[string]any{"name": "c", "image": "i:1", "env": []any{
		map[string]any{"name": "MY_MODEL", "value": "org/x"},
		map[string]any{"name": "MODEL_ID", "value": "org/y"},
	}})
	obj["spec"].(map[string]any)["template"].(map[string]any)["metadata"] = map[string]any{"labels": map[string]any{"team": "search", "app": "x"}}
	in, err := n.Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	want := []schemas.EnvVar{{Name: "MY_MODEL", Value: "org/x"}, {Name: "MODEL_ID", Value: "org/y"}}
	if !reflect.DeepEqual(in.Components[0].Containers[0].Env, want) {
		t.Errorf("env = %+v", in.Components[0].Containers[0].Env)
	}
	if !reflect.DeepEqual(in.Components[0].Labels, map[string]string{"team": "search"}) {
		t.Errorf("labels = %v", in.Components[0].Labels)
	}
}

// deployment builds a Deployment with the given containers.
func deployment(containers ...any) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "ml"},
		"spec": map[string]any{
			"template": map[string]any{
				"spec": map[string]any{"containers": containers},
			},
		},
	}
}

func TestImagesPinnedByDigestAreResolved(t *testing.T) {
	n, err := NewNormalizer(Config{Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "pinned", "namespace": "ml"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "image": "registry.example/vllm/vllm-openai:v0.10.1@" + digest},
			map[string]any{"name": "b", "image": "nginx:1.27"},
		}}}},
	}
	in, err := n.Normalize(obj, "file:x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Digests) != 1 || in.Digests[0].Digest != digest || in.Digests[0].Image != "registry.example/vllm/vllm-openai:v0.10.1@"+digest ||
		in.Digests[0].Locator != "spec.template.spec.containers[0].image" {
		t.Fatalf("digests %+v", in.Digests)
	}
}

// A template's placeholder namespace (KUBEFLOW_NAMESPACE) is no DNS label:
// the workload is read in the default namespace rather than lost, and what
// was written stays in its inputs. It was an invalid identity: no event.
func TestNamespacePlaceholder(t *testing.T) {
	n := newNormalizer(t, Config{DefaultNamespace: "default"})
	in, err := n.Normalize(parseObj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: tf-serve, namespace: KUBEFLOW_NAMESPACE}
spec:
  template:
    spec:
      containers:
      - {name: tf, image: "tensorflow/serving:2.13.1", command: [tensorflow_model_server]}
`), "file:x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if in.Workload.Namespace != "default" {
		t.Errorf("namespace %q", in.Workload.Namespace)
	}
	if f, ok := in.Field("namespaceAsWritten"); !ok || f.Value != "KUBEFLOW_NAMESPACE" {
		t.Errorf("fields %v", in.Fields)
	}
}
