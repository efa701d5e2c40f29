package collector

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
)

// testLookup is a Lookup over a fixed set of objects: an object matches
// when the group of its apiVersion, its kind and its namespace ("" for a
// cluster-scoped one) match.
type testLookup []map[string]any

func (l testLookup) matches(o map[string]any, apiVersion, kind, ns string) bool {
	g, _ := splitAPIVersion(apiVersion)
	av, _ := o["apiVersion"].(string)
	og, _ := splitAPIVersion(av)
	md, _ := o["metadata"].(map[string]any)
	ons, _ := md["namespace"].(string)
	return g == og && o["kind"] == kind && ons == ns
}

func (l testLookup) Get(apiVersion, kind, ns, name string) (map[string]any, bool) {
	for _, o := range l {
		if l.matches(o, apiVersion, kind, ns) && objName(o) == name {
			return o, true
		}
	}
	return nil, false
}

func (l testLookup) List(apiVersion, kind, ns string) []map[string]any {
	var out []map[string]any
	for _, o := range l {
		if l.matches(o, apiVersion, kind, ns) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return objName(out[i]) < objName(out[j]) })
	return out
}

// parseObjs reads the documents of a YAML text.
func parseObjs(t *testing.T, text string) []map[string]any {
	t.Helper()
	objs, err := manifest.Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Obj
	}
	return out
}

func parseObj(t *testing.T, text string) map[string]any {
	t.Helper()
	objs := parseObjs(t, text)
	if len(objs) != 1 {
		t.Fatalf("%d documents, want 1", len(objs))
	}
	return objs[0]
}

func normalizeWith(t *testing.T, n *Normalizer, obj map[string]any, lookup Lookup) *schemas.Inputs {
	t.Helper()
	in, err := n.NormalizeWith(obj, "cluster", lookup)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// --- YAML sub-path fields -----------------------------------------------------

const rayServiceDoc = `
apiVersion: ray.io/v1
kind: RayService
metadata: {name: llm, namespace: ml}
spec:
  serveConfigV2: |
    applications:
    - name: llm-a
      import_path: ray.serve.llm:build_openai_app
      args:
        llm_configs:
        - model_loading_config:
            model_id: qwen-0.5b
            model_source: Qwen/Qwen2.5-0.5B-Instruct
          engine_kwargs:
            tensor_parallel_size: 2
            max_model_len: 8192
        - model_loading_config:
            model_id: llama
            model_source:
              bucket_uri: s3://user:pw@models/llama?X-Amz-Signature=abc
          llm_engine: vLLM
          engine_kwargs:
            pipeline_parallel_size: 4
  rayClusterConfig:
    rayVersion: "2.46.0"
    headGroupSpec:
      template:
        spec:
          containers:
          - {name: ray-head, image: rayproject/ray-llm:2.46.0}
`

func TestYAMLFieldsRayService(t *testing.T) {
	n := newNormalizer(t, Config{})
	in, err := n.Normalize(parseObj(t, rayServiceDoc), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	const app = "spec.serveConfigV2:applications[0]"
	const c0, c1 = app + ".args.llm_configs[0]", app + ".args.llm_configs[1]"
	want := strings.Join([]string{
		"maxModelLen=8192@" + c0 + ".engine_kwargs.max_model_len",
		"pipelineParallelSize=4@" + c1 + ".engine_kwargs.pipeline_parallel_size",
		"rayLLMEngine=vLLM@" + c1 + ".llm_engine",
		"rayLLMModelId=qwen-0.5b@" + c0 + ".model_loading_config.model_id",
		"rayLLMModelId=llama@" + c1 + ".model_loading_config.model_id",
		// a string model_source, and the bucket_uri of a map one (the map
		// itself is no value), its credentials and query removed
		"rayLLMModelSource=Qwen/Qwen2.5-0.5B-Instruct@" + c0 + ".model_loading_config.model_source",
		"rayLLMModelSource=s3://REDACTED@models/llama@" + c1 + ".model_loading_config.model_source.bucket_uri",
		"rayServeApp=ray.serve.llm:build_openai_app@" + app + ".import_path",
		"rayVersion=2.46.0@spec.rayClusterConfig.rayVersion",
		"tensorParallelSize=2@" + c0 + ".engine_kwargs.tensor_parallel_size",
	}, " ")
	if got := fields(in.Fields); got != want {
		t.Errorf("fields:\n%s\nwant:\n%s", strings.ReplaceAll(got, " ", "\n"), strings.ReplaceAll(want, " ", "\n"))
	}
	wantShape(t, "llm", in, `
head [head] @spec.rayClusterConfig.headGroupSpec.template
  ray-head "rayproject/ray-llm:2.46.0" @spec.rayClusterConfig.headGroupSpec.template.spec.containers[0]
`)
}

// rayService is a RayService whose serveConfigV2 is config.
func rayService(config string) map[string]any {
	return map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayService",
		"metadata": map[string]any{"name": "llm", "namespace": "ml"},
		"spec": map[string]any{
			"serveConfigV2":    config,
			"rayClusterConfig": map[string]any{"rayVersion": "2.46.0"},
		},
	}
}

func TestYAMLFieldsWhatIsNoDocument(t *testing.T) {
	n := newNormalizer(t, Config{})
	for _, tc := range []struct {
		name, config string
		want         string // fields other than rayVersion
	}{
		{"malformed", "applications: [\n  - {import_path: x", ""},
		{"unterminated quote", "applications:\n- import_path: \"x\n", ""},
		{"a scalar", "just some text", ""},
		{"a list at the top", "- applications: x", ""},
		{"empty", "", ""},
		{"json is yaml", `{"applications": [{"import_path": "app:x", "args": {"llm_configs": [{"model_loading_config": {"model_id": "m"}}]}}]}`,
			"rayLLMModelId=m@spec.serveConfigV2:applications[0].args.llm_configs[0].model_loading_config.model_id rayServeApp=app:x@spec.serveConfigV2:applications[0].import_path"},
		{"a map where a value belongs", "applications:\n- import_path: {a: b}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := n.Normalize(rayService(tc.config), "cluster")
			if err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			var got []string
			for _, f := range in.Fields {
				if f.Name != "rayVersion" {
					got = append(got, f.Name+"="+f.Value+"@"+f.Locator)
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("fields = %q, want %q", g, tc.want)
			}
			if _, ok := in.Field("rayVersion"); !ok {
				t.Error("the plain field next to it is gone")
			}
		})
	}
}

func TestYAMLFieldsDocumentLimit(t *testing.T) {
	n := newNormalizer(t, Config{})
	// A document of exactly size bytes whose import_path is app:x.
	doc := func(size int) string {
		head := "applications:\n- import_path: app:x\n  pad: "
		return head + strings.Repeat("x", size-len(head))
	}
	for _, tc := range []struct {
		size int
		read bool
	}{{4 << 10, true}, {1 << 20, true}, {1<<20 + 1, false}, {3 << 20, false}} {
		text := doc(tc.size)
		if len(text) != tc.size {
			t.Fatalf("document of %d bytes, want %d", len(text), tc.size)
		}
		in, err := n.Normalize(rayService(text), "cluster")
		if err != nil {
			t.Fatalf("%d bytes: %v", tc.size, err)
		}
		f, ok := in.Field("rayServeApp")
		if ok != tc.read || ok && (f.Value != "app:x" || f.Locator != "spec.serveConfigV2:applications[0].import_path") {
			t.Errorf("%d bytes: rayServeApp = %+v, %v; want read: %v", tc.size, f, ok, tc.read)
		}
	}
}

// A KAITO Workspace: its runtime from an annotation whose key holds dots
// and a slash (a quoted path segment), and the vLLM settings of the
// ConfigMap it names, read from a YAML document in the ConfigMap's data.
func TestKaitoWorkspaceAnnotationAndConfigMap(t *testing.T) {
	objs := parseObjs(t, `
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata:
  name: ws
  namespace: ml
  annotations: {kaito.sh/runtime: transformers, kaito.sh: not-this, other/x: "y"}
resource: {instanceType: Standard_NC24ads_A100_v4}
inference:
  preset: {name: phi-3-mini-4k-instruct}
  config: ws-config
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ws-config, namespace: ml}
data:
  inference_config.yaml: |
    vllm:
      tensor-parallel-size: 2
      max-model-len: 4096
      api-key: not-read
  broken.yaml: "vllm: [unclosed"
`)
	n := newNormalizer(t, Config{})
	in := normalizeWith(t, n, objs[0], testLookup(objs))
	const cm = `ConfigMap/ws-config:data["inference_config.yaml"]:`
	want := `kaitoPreset=phi-3-mini-4k-instruct@inference.preset.name ` +
		`kaitoRuntime=transformers@metadata.annotations["kaito.sh/runtime"] ` +
		`maxModelLen=4096@` + cm + `vllm.max-model-len ` +
		`tensorParallelSize=2@` + cm + `vllm.tensor-parallel-size`
	if got := fields(in.Fields); got != want {
		t.Errorf("fields:\n%s\nwant:\n%s", got, want)
	}
	// No lookup: the annotation is still read, the ConfigMap is not.
	in = normalizeWith(t, n, objs[0], nil)
	if got := fields(in.Fields); got != `kaitoPreset=phi-3-mini-4k-instruct@inference.preset.name kaitoRuntime=transformers@metadata.annotations["kaito.sh/runtime"]` {
		t.Errorf("fields without a lookup: %s", got)
	}
}

func TestQuotedPathSegments(t *testing.T) {
	for _, tc := range []struct {
		raw      string
		keys     []string
		absolute bool
		up       int
	}{
		{"metadata.annotations.'kaito.sh/runtime'", []string{"metadata", "annotations", "kaito.sh/runtime"}, false, 0},
		{"'a.b'.c", []string{"a.b", "c"}, false, 0},
		{"$.metadata.labels.'app.kubernetes.io/name'", []string{"metadata", "labels", "app.kubernetes.io/name"}, true, 0},
		{"../'x.y'.z", []string{"x.y", "z"}, false, 1},
		{"a.'b c/d*'", []string{"a", "b c/d*"}, false, 0},
	} {
		p, err := compilePath(tc.raw)
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		var keys []string
		for _, s := range p.segs {
			if s.any || s.alts != nil {
				t.Errorf("%s: segment %+v is a wildcard", tc.raw, s)
			}
			keys = append(keys, s.key)
		}
		if !reflect.DeepEqual(keys, tc.keys) || p.absolute != tc.absolute || p.up != tc.up {
			t.Errorf("%s: keys %q absolute %v up %d, want %q %v %d", tc.raw, keys, p.absolute, p.up, tc.keys, tc.absolute, tc.up)
		}
	}
	// A quoted "*" is a key, not a wildcard.
	p, err := compilePath("a.'*'")
	if err != nil {
		t.Fatal(err)
	}
	got := p.walk(map[string]any{"a": map[string]any{"*": "star", "b": "other"}}, nil)
	if len(got) != 1 || got[0].value() != "star" || got[0].locator() != `a["*"]` {
		t.Errorf("a.'*' walked to %+v", got)
	}

	for _, tc := range []struct{ raw, want string }{
		{"metadata.annotations.'kaito.sh/runtime", "unclosed quote"},
		{"'open", "unclosed quote"},
		{"a.'b'c", "must end at a dot"},
		{"a.'b'.", "empty segment"},
	} {
		_, err := compilePath(tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.raw) {
			t.Errorf("%s: err = %v, want one naming the path and %q", tc.raw, err, tc.want)
		}
	}

	// In a profiles file, the error names the file and the field.
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte(`profiles:
- group: example.com
  kind: Thing
  workload: true
  fields:
  - {name: runtime, path: "metadata.annotations.'example.com/runtime"}
  components:
  - {path: spec, name: main}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = NewNormalizer(Config{ProfilesFile: file})
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "fields[0].path") || !strings.Contains(err.Error(), "unclosed quote") {
		t.Errorf("profiles file with an unclosed quote: err = %v", err)
	}
}

// --- env given as a map (KubeAI) --------------------------------------------

func TestEnvMapKubeAIModel(t *testing.T) {
	n := newNormalizer(t, Config{})
	obj := parseObj(t, `
apiVersion: kubeai.org/v1
kind: Model
metadata: {name: qwen, namespace: ml}
spec:
  url: hf://Qwen/Qwen2.5-0.5B-Instruct
  engine: VLLM
  image: vllm/vllm-openai:v0.9.0
  args: ["--max-model-len", "4096", "--api-key", "k1"]
  env:
    ZED: "z1"
    MODEL_ID: org/m
    HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz0123
    MAX_MODEL_LEN: 4096
    MODEL: "https://bob:pw1@host/m"
    VLLM_ADDITIONAL_ARGS: "--api-key k2 --max-num-seqs 8"
`)
	in, err := n.Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	wantShape(t, "qwen", in, `
server [] @spec
  server "vllm/vllm-openai:v0.9.0" @spec.image
`)
	if got := fields(in.Fields); got != "kubeaiEngine=VLLM@spec.engine modelUrl=hf://Qwen/Qwen2.5-0.5B-Instruct@spec.url" {
		t.Errorf("fields = %s", got)
	}
	ct := in.Components[0].Containers[0]
	if want := []string{"--max-model-len", "4096", "--api-key", "REDACTED"}; !reflect.DeepEqual(ct.Args, want) {
		t.Errorf("args = %q, want %q", ct.Args, want)
	}
	wantEnv := []schemas.EnvVar{
		{Name: "HF_TOKEN", Redacted: true},
		{Name: "MAX_MODEL_LEN", Value: "4096"},
		{Name: "MODEL", Redacted: true}, // allow-listed, but it holds a credential
		{Name: "MODEL_ID", Value: "org/m"},
		{Name: "VLLM_ADDITIONAL_ARGS", Value: "--api-key REDACTED --max-num-seqs REDACTED"},
		{Name: "ZED", Redacted: true},
	}
	if !reflect.DeepEqual(ct.Env, wantEnv) {
		t.Errorf("env = %+v\nwant  %+v", ct.Env, wantEnv)
	}

	for _, tc := range []struct {
		env  any
		want string
	}{
		{[]any{map[string]any{"name": "MODEL_ID", "value": "org/m"}}, "ml/Model/qwen: spec.env: expected a map of env values, found a list"},
		{"MODEL_ID=org/m", "ml/Model/qwen: spec.env: expected a map of env values, found a scalar"},
	} {
		obj["spec"].(map[string]any)["env"] = tc.env
		_, err := n.Normalize(obj, "cluster")
		if err == nil || err.Error() != tc.want || errors.Is(err, ErrNotWorkload) || errors.Is(err, ErrUnknownKind) {
			t.Errorf("env %v: err = %v, want %q", tc.env, err, tc.want)
		}
	}
	// No env at all is no env.
	delete(obj["spec"].(map[string]any), "env")
	in, err = n.Normalize(obj, "cluster")
	if err != nil || in.Components[0].Containers[0].Env != nil {
		t.Errorf("no env: %v %+v", err, in)
	}
}

// --- links: the runtime of a KServe predictor ---------------------------------

func isvcObj(runtime, format, version string) map[string]any {
	model := map[string]any{"storageUri": "hf://org/m"}
	if format != "" {
		mf := map[string]any{"name": format}
		if version != "" {
			mf["version"] = version
		}
		model["modelFormat"] = mf
	}
	if runtime != "" {
		model["runtime"] = runtime
	}
	return map[string]any{
		"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
		"metadata": map[string]any{"name": "isvc", "namespace": "ml"},
		"spec":     map[string]any{"predictor": map[string]any{"model": model}},
	}
}

// format is one supportedModelFormats item.
type format struct {
	name, version string
	auto          any // nil: not set
	priority      any // nil: not set
}

// runtimeObj is a ServingRuntime (ns != "") or a ClusterServingRuntime.
func runtimeObj(ns, name string, spec map[string]any, formats ...format) map[string]any {
	kind := "ServingRuntime"
	md := map[string]any{"name": name}
	if ns == "" {
		kind = "ClusterServingRuntime"
	} else {
		md["namespace"] = ns
	}
	s := map[string]any{"containers": []any{map[string]any{"name": "kserve-container", "image": name + ":1"}}}
	maps.Copy(s, spec)
	var items []any
	for _, f := range formats {
		it := map[string]any{"name": f.name}
		if f.version != "" {
			it["version"] = f.version
		}
		if f.auto != nil {
			it["autoSelect"] = f.auto
		}
		if f.priority != nil {
			it["priority"] = f.priority
		}
		items = append(items, it)
	}
	s["supportedModelFormats"] = items
	return map[string]any{"apiVersion": "serving.kserve.io/v1alpha1", "kind": kind, "metadata": md, "spec": s}
}

// linkedRuntime is "<Kind>/<name>" of the runtime linked to in, "" for none.
func linkedRuntime(t *testing.T, in *schemas.Inputs) string {
	t.Helper()
	f, ok := in.Field("runtime")
	if !ok {
		return ""
	}
	by, path, found := strings.Cut(f.Locator, ":")
	if !found || path != "metadata.name" || !strings.HasSuffix(by, "/"+f.Value) {
		t.Fatalf("runtime field %+v", f)
	}
	return by
}

func TestLinkNamedRuntime(t *testing.T) {
	n := newNormalizer(t, Config{})
	hf := format{name: "huggingface", auto: true, priority: int64(1)}
	for _, tc := range []struct {
		name    string
		isvc    map[string]any
		objects []map[string]any
		want    string
	}{
		{"namespace first", isvcObj("rt", "huggingface", ""),
			[]map[string]any{runtimeObj("", "rt", nil, hf), runtimeObj("ml", "rt", nil, hf)}, "ServingRuntime/rt"},
		{"then cluster-scoped", isvcObj("rt", "huggingface", ""),
			[]map[string]any{runtimeObj("", "rt", nil, hf), runtimeObj("other", "rt", nil, hf)}, "ClusterServingRuntime/rt"},
		{"another namespace is not seen", isvcObj("rt", "huggingface", ""),
			[]map[string]any{runtimeObj("other", "rt", nil, hf)}, ""},
		{"the name wins over selection", isvcObj("low", "huggingface", ""),
			[]map[string]any{runtimeObj("ml", "high", nil, format{name: "huggingface", auto: true, priority: int64(9)}),
				runtimeObj("ml", "low", nil, format{name: "sklearn"})}, "ServingRuntime/low"},
		// KServe fails a predictor whose runtime does not exist; it does
		// not pick another.
		{"a missing named runtime selects none", isvcObj("missing", "huggingface", ""),
			[]map[string]any{runtimeObj("ml", "auto", nil, hf)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := normalizeWith(t, n, tc.isvc, testLookup(tc.objects))
			if got := linkedRuntime(t, in); got != tc.want {
				t.Errorf("linked %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLinkSelectedRuntime(t *testing.T) {
	n := newNormalizer(t, Config{})
	hf := func(prio any) format { return format{name: "huggingface", auto: true, priority: prio} }
	for _, tc := range []struct {
		name             string
		format, version  string
		objects          []map[string]any
		want             string
		wantNoneSelected bool
	}{
		{name: "highest priority", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "a", nil, hf(int64(1))), runtimeObj("ml", "c", nil, hf(int64(2))), runtimeObj("ml", "b", nil, hf(nil))},
			want: "ServingRuntime/c"},
		{name: "autoSelect false or unset never", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "a", nil, hf(int64(1))),
			runtimeObj("ml", "b", nil, format{name: "huggingface", auto: false, priority: int64(5)}),
			runtimeObj("ml", "c", nil, format{name: "huggingface", priority: int64(5)})},
			want: "ServingRuntime/a"},
		{name: "only runtimes that are not autoSelect", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "b", nil, format{name: "huggingface", auto: false, priority: int64(5)})}},
		{name: "disabled and multi-model excluded", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "a", nil, hf(int64(1))),
			runtimeObj("ml", "d", map[string]any{"disabled": true}, hf(int64(9))),
			runtimeObj("ml", "e", map[string]any{"multiModel": true}, hf(int64(9))),
			runtimeObj("ml", "f", map[string]any{"multiModel": false, "disabled": false}, hf(int64(3)))},
			want: "ServingRuntime/f"},
		{name: "a namespace runtime over a higher-priority cluster one", format: "huggingface", objects: []map[string]any{
			runtimeObj("", "z", nil, hf(int64(100))), runtimeObj("ml", "a", nil, hf(int64(1)))},
			want: "ServingRuntime/a"},
		{name: "cluster runtimes when the namespace has none that match", format: "huggingface", objects: []map[string]any{
			runtimeObj("", "y", nil, hf(int64(1))), runtimeObj("", "z", nil, hf(int64(2))),
			runtimeObj("ml", "sk", nil, format{name: "sklearn", auto: true, priority: int64(50)})},
			want: "ClusterServingRuntime/z"},
		{name: "the version given must match", format: "huggingface", version: "2", objects: []map[string]any{
			runtimeObj("ml", "v1", nil, format{name: "huggingface", version: "1", auto: true, priority: int64(9)}),
			runtimeObj("ml", "v2", nil, format{name: "huggingface", version: "2", auto: true, priority: int64(1)})},
			want: "ServingRuntime/v2"},
		{name: "no version given matches any", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "v1", nil, format{name: "huggingface", version: "1", auto: true, priority: int64(1)})},
			want: "ServingRuntime/v1"},
		{name: "a version no runtime has", format: "huggingface", version: "3", objects: []map[string]any{
			runtimeObj("ml", "v1", nil, format{name: "huggingface", version: "1", auto: true, priority: int64(1)})}},
		{name: "case is ignored", format: "HuggingFace", objects: []map[string]any{
			runtimeObj("ml", "a", nil, hf(int64(1)))},
			want: "ServingRuntime/a"},
		{name: "another format", format: "sklearn", objects: []map[string]any{
			runtimeObj("ml", "a", nil, hf(int64(1)))}},
		{name: "the matching item's priority counts", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "x", nil, format{name: "sklearn", auto: true, priority: int64(10)}, hf(int64(1))),
			runtimeObj("ml", "y", nil, hf(int64(2)))},
			want: "ServingRuntime/y"},
		{name: "a tie goes to the first name", format: "huggingface", objects: []map[string]any{
			runtimeObj("ml", "b", nil, hf(int64(1))), runtimeObj("ml", "a", nil, hf(int64(1)))},
			want: "ServingRuntime/a"},
		{name: "another namespace is not seen", format: "huggingface", objects: []map[string]any{
			runtimeObj("other", "a", nil, hf(int64(1)))}},
		{name: "no format, no selection", objects: []map[string]any{
			runtimeObj("ml", "a", nil, hf(int64(1)))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := normalizeWith(t, n, isvcObj("", tc.format, tc.version), testLookup(tc.objects))
			if got := linkedRuntime(t, in); got != tc.want {
				t.Errorf("linked %q, want %q", got, tc.want)
			}
			// The linked runtime's container joins the predictor.
			pred := in.Components[0]
			if pred.Name != "predictor" {
				t.Fatalf("first component %q", pred.Name)
			}
			wantContainers := 1
			if tc.want != "" {
				wantContainers = 2
			}
			if len(pred.Containers) != wantContainers {
				t.Fatalf("predictor containers: %d, want %d", len(pred.Containers), wantContainers)
			}
			if tc.want != "" {
				_, name, _ := strings.Cut(tc.want, "/")
				if ct := pred.Containers[1]; ct.Image != name+":1" || ct.Locator != tc.want+":spec.containers[0]" {
					t.Errorf("linked container %+v", ct)
				}
			}
		})
	}
}

const runtimeDocs = `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc, namespace: ml}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      runtime: hf-rt
      storageUri: hf://org/m
      args: ["--dtype", "bfloat16"]
---
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: hf-rt, namespace: ml}
spec:
  supportedModelFormats:
  - {name: huggingface, autoSelect: true, priority: 1}
  containers:
  - name: kserve-container
    image: kserve/huggingfaceserver:v0.15.0
    args: ["--model_name={{.Name}}", "--served-model-name", "{{.Namespace}}-{{.Name}}", "--model_dir=/mnt/models", "--api-key", "k1"]
    env:
    - {name: MODEL_NAME, value: "{{.Namespace}}/{{.Name}}"}
    - {name: OTHER, value: "{{.Name}}"}
    volumeMounts:
    - {name: shm, mountPath: /dev/shm}
  - name: agent
    image: kserve/agent:v0.15.0
`

func TestLinkContainersJoinThePredictor(t *testing.T) {
	objs := parseObjs(t, runtimeDocs)
	n := newNormalizer(t, Config{})
	in := normalizeWith(t, n, objs[0], testLookup(objs))
	wantShape(t, "isvc", in, `
predictor [predictor] @spec.predictor
  kserve-container "" @spec.predictor.model
  kserve-container "kserve/huggingfaceserver:v0.15.0" @ServingRuntime/hf-rt:spec.containers[0]
  agent "kserve/agent:v0.15.0" @ServingRuntime/hf-rt:spec.containers[1]
`)
	if got := fields(in.Fields); got != "runtime=hf-rt@ServingRuntime/hf-rt:metadata.name" {
		t.Errorf("workload fields = %s", got)
	}
	rt := in.Components[0].Containers[1]
	wantArgs := []string{"--model_name=isvc", "--served-model-name", "ml-isvc", "--model_dir=REDACTED", "--api-key", "REDACTED"}
	if !reflect.DeepEqual(rt.Args, wantArgs) {
		t.Errorf("args = %q\nwant   %q", rt.Args, wantArgs)
	}
	wantEnv := []schemas.EnvVar{{Name: "MODEL_NAME", Value: "ml/isvc"}, {Name: "OTHER", Redacted: true}}
	if !reflect.DeepEqual(rt.Env, wantEnv) {
		t.Errorf("env = %+v, want %+v", rt.Env, wantEnv)
	}
	if rt.Mounts != nil {
		t.Errorf("the runtime's mounts were kept: %+v", rt.Mounts)
	}
	// The runtime's own object is not changed by filling placeholders.
	args := objs[1]["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"].([]any)
	if args[0] != "--model_name={{.Name}}" {
		t.Errorf("the runtime object was modified: %v", args)
	}

	// No lookup: nothing is linked.
	in = normalizeWith(t, n, objs[0], nil)
	wantShape(t, "isvc without a lookup", in, `
predictor [predictor] @spec.predictor
  kserve-container "" @spec.predictor.model
`)
	if len(in.Fields) != 0 {
		t.Errorf("fields without a lookup: %s", fields(in.Fields))
	}
	// Normalize is NormalizeWith with no lookup.
	plain, err := n.Normalize(objs[0], "cluster")
	if err != nil || !reflect.DeepEqual(plain, in) {
		t.Errorf("Normalize = %+v, %v; want %+v", plain, err, in)
	}
}

// --- bound objects: Seldon Models loaded into a Server --------------------------

func seldonModel(ns, name string, spec map[string]any) map[string]any {
	s := map[string]any{"storageUri": "gs://models/" + name}
	maps.Copy(s, spec)
	return map[string]any{
		"apiVersion": "mlops.seldon.io/v1alpha1", "kind": "Model",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": s,
	}
}

func TestBoundSeldonModels(t *testing.T) {
	models := testLookup{
		seldonModel("ml", "named", map[string]any{"server": "srv"}),
		seldonModel("ml", "other", map[string]any{"server": "triton-x", "requirements": []any{"sklearn"}}),
		seldonModel("ml", "sk", map[string]any{"requirements": []any{"SKLearn"}}),
		seldonModel("ml", "sk-xgb", map[string]any{"requirements": []any{"sklearn", "xgboost"}}),
		seldonModel("ml", "sk-trt", map[string]any{"requirements": []any{"sklearn", "tensorrt"}}),
		seldonModel("ml", "trt", map[string]any{"requirements": []any{"tensorrt"}}),
		seldonModel("ml", "custom", map[string]any{"requirements": []any{"my-cap"}}),
		seldonModel("ml", "none", nil),
		seldonModel("ml", "empty-server", map[string]any{"server": "", "requirements": []any{"sklearn"}}),
		seldonModel("other", "elsewhere", map[string]any{"server": "srv"}),
	}
	n := newNormalizer(t, Config{})
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"mlserver defaults", map[string]any{"serverConfig": "mlserver"}, []string{"empty-server", "named", "sk", "sk-xgb"}},
		{"config name case ignored", map[string]any{"serverConfig": "MLServer"}, []string{"empty-server", "named", "sk", "sk-xgb"}},
		{"triton defaults", map[string]any{"serverConfig": "triton"}, []string{"named", "trt"}},
		{"a config with no defaults", map[string]any{"serverConfig": "my-config"}, []string{"named"}},
		{"capabilities override the defaults", map[string]any{"serverConfig": "mlserver", "capabilities": []any{"tensorrt", "sklearn"}},
			[]string{"empty-server", "named", "sk", "sk-trt", "trt"}},
		{"extra capabilities add to the defaults", map[string]any{"serverConfig": "mlserver", "extraCapabilities": []any{"my-cap"}},
			[]string{"custom", "empty-server", "named", "sk", "sk-xgb"}},
		{"extra capabilities add to the override", map[string]any{"serverConfig": "mlserver", "capabilities": []any{"tensorrt"}, "extraCapabilities": []any{"My-Cap"}},
			[]string{"custom", "named", "trt"}},
		{"comma-separated capabilities", map[string]any{"capabilities": "tensorrt, sklearn"},
			[]string{"empty-server", "named", "sk", "sk-trt", "trt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := map[string]any{
				"apiVersion": "mlops.seldon.io/v1alpha1", "kind": "Server",
				"metadata": map[string]any{"name": "srv", "namespace": "ml"}, "spec": tc.spec,
			}
			in := normalizeWith(t, n, srv, models)
			var got []string
			for _, f := range in.Fields {
				if f.Name != "storageUri" {
					continue
				}
				by, path, _ := strings.Cut(f.Locator, ":")
				name := strings.TrimPrefix(by, "Model/")
				if path != "spec.storageUri" || f.Value != "gs://models/"+name || by != "Model/"+name {
					t.Errorf("field %+v", f)
				}
				got = append(got, name)
			}
			// Fields are in locator order ("Model/sk-xgb:" before "Model/sk:").
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("bound %q, want %q", got, tc.want)
			}
		})
	}
	// No lookup: nothing bound.
	in := normalizeWith(t, n, map[string]any{
		"apiVersion": "mlops.seldon.io/v1alpha1", "kind": "Server",
		"metadata": map[string]any{"name": "srv", "namespace": "ml"}, "spec": map[string]any{"serverConfig": "mlserver"},
	}, nil)
	if got := fields(in.Fields); got != "seldonServerConfig=mlserver@spec.serverConfig" {
		t.Errorf("fields without a lookup: %s", got)
	}
}

// A KServe TrainedModel's fields join the predictor it is loaded into.
func TestBoundTrainedModelJoinsTheComponent(t *testing.T) {
	objs := parseObjs(t, `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc, namespace: ml}
spec:
  predictor:
    model:
      modelFormat: {name: sklearn}
      storageUri: gs://b/base
---
apiVersion: serving.kserve.io/v1alpha1
kind: TrainedModel
metadata: {name: tm, namespace: ml}
spec:
  inferenceService: isvc
  model: {storageUri: "gs://b/tm?X-Goog-Signature=abc"}
---
apiVersion: serving.kserve.io/v1alpha1
kind: TrainedModel
metadata: {name: tm-other, namespace: ml}
spec:
  inferenceService: another
  model: {storageUri: gs://b/other}
`)
	in := normalizeWith(t, newNormalizer(t, Config{}), objs[0], testLookup(objs))
	if len(in.Fields) != 0 {
		t.Errorf("workload fields: %s", fields(in.Fields))
	}
	want := "modelFormat=sklearn@spec.predictor.model.modelFormat.name storageUri=gs://b/tm@TrainedModel/tm:spec.model.storageUri storageUri=gs://b/base@spec.predictor.model.storageUri"
	if got := fields(in.Components[0].Fields); got != want {
		t.Errorf("predictor fields:\n%s\nwant:\n%s", got, want)
	}
}

// --- claims: an Argo Rollout takes over a Deployment ----------------------------

const rolloutDocs = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: canary, namespace: ml}
spec:
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai:v0.9.0@sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `
        args: ["--model", "org/m", "--api-key", "k1"]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: lone, namespace: ml}
spec:
  template:
    spec:
      containers:
      - {name: server, image: "nginx:1"}
`

func TestClaimRolloutDeployment(t *testing.T) {
	objs := parseObjs(t, rolloutDocs)
	rollout, web, lone := objs[0], objs[1], objs[2]
	lookup := testLookup(objs)
	n := newNormalizer(t, Config{})

	in := normalizeWith(t, n, rollout, lookup)
	wantShape(t, "canary", in, `
web [] @Deployment/web:spec.template
  server "vllm/vllm-openai:v0.9.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" @Deployment/web:spec.template.spec.containers[0]
`)
	if want := []schemas.ObjectRef{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}; !reflect.DeepEqual(in.Owned, want) {
		t.Errorf("owned = %+v, want %+v", in.Owned, want)
	}
	if !reflect.DeepEqual(Claims(in), in.Owned) {
		t.Errorf("Claims = %+v", Claims(in))
	}
	if want := []string{"--model", "org/m", "--api-key", "REDACTED"}; !reflect.DeepEqual(in.Components[0].Containers[0].Args, want) {
		t.Errorf("args = %q", in.Components[0].Containers[0].Args)
	}
	if len(in.Digests) != 1 || in.Digests[0].Locator != "Deployment/web:spec.template.spec.containers[0].image" {
		t.Errorf("digests = %+v", in.Digests)
	}
	if in.Workload.Kind != "Rollout" || in.Workload.Name != "canary" || in.Profile != "" {
		t.Errorf("workload %+v profile %q", in.Workload, in.Profile)
	}

	// The Deployment, seen with the same objects, is part of the Rollout.
	_, err := n.NormalizeWith(web, "cluster", lookup)
	if !errors.Is(err, ErrNotWorkload) || err.Error() != "ml/Deployment/web: part of Rollout/canary, which names it as its workload" {
		t.Errorf("claimed deployment: err = %v", err)
	}
	// One no Rollout names is a workload, and so is the claimed one
	// without a lookup.
	if _, err := n.NormalizeWith(lone, "cluster", lookup); err != nil {
		t.Errorf("unclaimed deployment: %v", err)
	}
	if _, err := n.NormalizeWith(web, "cluster", nil); err != nil {
		t.Errorf("deployment without a lookup: %v", err)
	}

	// Without a lookup the Rollout still says what it claims.
	in = normalizeWith(t, n, rollout, nil)
	if len(in.Components) != 0 || len(in.Owned) != 1 || in.Owned[0].Name != "web" {
		t.Errorf("rollout without a lookup: %+v", in)
	}
}

func TestClaimKindMustMatch(t *testing.T) {
	objs := parseObjs(t, rolloutDocs)
	rollout, web := objs[0], objs[1]
	ref := rollout["spec"].(map[string]any)["workloadRef"].(map[string]any)
	n := newNormalizer(t, Config{})

	ref["kind"] = "StatefulSet"
	lookup := testLookup(objs)
	in := normalizeWith(t, n, rollout, lookup)
	if len(in.Owned) != 0 || len(in.Components) != 0 {
		t.Errorf("a StatefulSet ref claimed %+v, components %s", in.Owned, shape(in))
	}
	if _, err := n.NormalizeWith(web, "cluster", lookup); err != nil {
		t.Errorf("deployment named by a StatefulSet ref: %v", err)
	}

	// A ReplicaSet ref claims the ReplicaSet.
	ref["kind"] = "ReplicaSet"
	ref["name"] = "web-abc"
	in = normalizeWith(t, n, rollout, lookup)
	if want := []schemas.ObjectRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc"}}; !reflect.DeepEqual(in.Owned, want) {
		t.Errorf("owned = %+v, want %+v", in.Owned, want)
	}
	if _, err := n.NormalizeWith(web, "cluster", lookup); err != nil {
		t.Errorf("deployment not named: %v", err)
	}
}
