package collector

import (
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

func TestGenericProfileByShape(t *testing.T) {
	n := newNormalizer(t, Config{})
	for _, tc := range []struct {
		name, doc, shape string
		labels           map[string]string
	}{
		{"spec.template.spec", `
apiVersion: inference.example.com/v1
kind: Widget
metadata: {name: w1, namespace: ml}
spec:
  replicas: 2
  template:
    metadata: {labels: {llm-d.ai/role: decode, app: x}}
    spec:
      containers:
      - {name: engine, image: "vllm/vllm-openai:v0.9.0", args: ["--model", "org/m", "--api-key", "k1"]}
      initContainers:
      - {name: fetch, image: "busybox:1"}
`, `
w1 [] @spec.template.spec
  engine "vllm/vllm-openai:v0.9.0" @spec.template.spec.containers[0]
  fetch init "busybox:1" @spec.template.spec.initContainers[0]
`, map[string]string{"llm-d.ai/role": "decode"}},
		{"spec.podSpec", `
apiVersion: inference.example.com/v1
kind: Widget
metadata: {name: w2, namespace: ml}
spec:
  podSpec:
    containers:
    - {name: engine, image: "e:1"}
`, `
w2 [] @spec.podSpec
  engine "e:1" @spec.podSpec.containers[0]
`, nil},
		{"workers named after the items; a role's name is its role", `
apiVersion: inference.example.com/v1
kind: Widget
metadata: {name: w3, namespace: ml}
spec:
  workers:
  - name: prefill
    template:
      spec:
        containers:
        - {name: engine, image: "e:1"}
  - name: decode
    template:
      metadata: {labels: {llm-d.ai/role: decode}}
      spec:
        containers:
        - {name: engine, image: "e:2"}
  - template:
      spec:
        containers:
        - {name: engine, image: "e:3"}
`, `
prefill [prefill] @spec.workers[0].template.spec
  engine "e:1" @spec.workers[0].template.spec.containers[0]
decode [decode] @spec.workers[1].template.spec
  engine "e:2" @spec.workers[1].template.spec.containers[0]
workers-2 [] @spec.workers[2].template.spec
  engine "e:3" @spec.workers[2].template.spec.containers[0]
`, nil},
		{"spec itself", `
apiVersion: inference.example.com/v1
kind: Widget
metadata: {name: w4, namespace: ml}
spec:
  containers:
  - {name: only-a-name}
`, `
w4 [] @spec
  only-a-name "" @spec.containers[0]
`, nil},
		{"named maps, sorted", `
apiVersion: inference.example.com/v1
kind: Widget
metadata: {name: w5, namespace: ml}
spec:
  roles:
    zeta: {podSpec: {containers: [{name: z, image: "z:1"}]}}
    alpha: {podSpec: {containers: [{name: a, image: "a:1"}]}}
status:
  lastPod: {containers: [{name: s, image: "s:1"}]}
`, `
alpha [] @spec.roles.alpha.podSpec
  a "a:1" @spec.roles.alpha.podSpec.containers[0]
zeta [] @spec.roles.zeta.podSpec
  z "z:1" @spec.roles.zeta.podSpec.containers[0]
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := n.Normalize(parseObj(t, tc.doc), "file:w.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if in.Profile != schemas.ProfileGeneric {
				t.Errorf("profile = %q, want %q", in.Profile, schemas.ProfileGeneric)
			}
			if in.Workload.Kind != "Widget" || in.Workload.APIVersion != "inference.example.com/v1" || in.Workload.Namespace != "ml" {
				t.Errorf("workload = %+v", in.Workload)
			}
			wantShape(t, tc.name, in, tc.shape)
			if tc.labels != nil && !reflect.DeepEqual(in.Components[0].Labels, tc.labels) {
				t.Errorf("labels = %v, want %v", in.Components[0].Labels, tc.labels)
			}
			// Read like any other kind: redacted.
			for _, c := range in.Components {
				for _, ct := range c.Containers {
					for _, a := range ct.Args {
						if a == "k1" {
							t.Errorf("%s kept a value no rule reads: %q", ct.Name, ct.Args)
						}
					}
				}
			}
		})
	}
}

func TestGenericNeedsAPodTemplate(t *testing.T) {
	n := newNormalizer(t, Config{})
	for name, doc := range map[string]string{
		"no spec": `{apiVersion: example.com/v1, kind: Foo, metadata: {name: f, namespace: ml}}`,
		"containers of strings": `{apiVersion: example.com/v1, kind: Foo, metadata: {name: f, namespace: ml},
			spec: {template: {spec: {containers: ["a", "b"]}}}}`,
		"containers with neither image nor name": `{apiVersion: example.com/v1, kind: Foo, metadata: {name: f, namespace: ml},
			spec: {template: {spec: {containers: [{command: [x]}]}}}}`,
		"empty containers": `{apiVersion: example.com/v1, kind: Foo, metadata: {name: f, namespace: ml}, spec: {containers: []}}`,
		"only in status and metadata": `{apiVersion: example.com/v1, kind: Foo, metadata: {name: f, namespace: ml, x: {containers: [{name: a, image: "a:1"}]}},
			status: {pod: {containers: [{name: a, image: "a:1"}]}}}`,
		"containers at the root": `{apiVersion: example.com/v1, kind: Foo, metadata: {name: f, namespace: ml}, containers: [{name: a, image: "a:1"}]}`,
	} {
		_, err := n.Normalize(parseObj(t, doc), "cluster")
		if !errors.Is(err, ErrUnknownKind) || err.Error() != "ml/Foo/f: unknown kind example.com/v1 Foo (it holds no pod template, container, engine or model field)" {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// Too deep to be searched.
	deep := map[string]any{"containers": []any{map[string]any{"name": "a", "image": "a:1"}}}
	for range maxGenericDepth + 1 {
		deep = map[string]any{"x": deep}
	}
	_, err := n.Normalize(map[string]any{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": map[string]any{"name": "f"}, "spec": deep}, "cluster")
	if !errors.Is(err, ErrUnknownKind) {
		t.Errorf("a pod spec deeper than %d levels: err = %v", maxGenericDepth, err)
	}
}

// A known kind at a version its profile does not read is read by its shape
// when it holds a pod template.
func TestGenericForAnUnreadVersion(t *testing.T) {
	n := newNormalizer(t, Config{})
	obj := parseObj(t, `
apiVersion: nvidia.com/v9
kind: DynamoGraphDeployment
metadata: {name: g, namespace: ml}
spec:
  backendFramework: vllm
  components:
  - name: Worker
    podTemplate:
      spec:
        containers:
        - {name: main, image: "dyn/runtime:9"}
`)
	in, err := n.Normalize(obj, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if in.Profile != schemas.ProfileGeneric {
		t.Errorf("profile = %q", in.Profile)
	}
	// The generic profile reads no kind fields.
	if len(in.Fields) != 0 {
		t.Errorf("fields = %s", fields(in.Fields))
	}
	wantShape(t, "g", in, `
Worker [worker] @spec.components[0].podTemplate.spec
  main "dyn/runtime:9" @spec.components[0].podTemplate.spec.containers[0]
`)
	// The same object at a version the profile reads is read by it.
	obj["apiVersion"] = "nvidia.com/v1beta1"
	in, err = n.Normalize(obj, "cluster")
	if err != nil || in.Profile != "" || fields(in.Fields) != "backendFramework=vllm@spec.backendFramework" {
		t.Errorf("v1beta1: %v, profile %q, fields %s", err, in.Profile, fields(in.Fields))
	}
	// With no pod template, the version is unknown.
	_, err = n.Normalize(parseObj(t, `{apiVersion: nvidia.com/v9, kind: DynamoGraphDeployment, metadata: {name: g, namespace: ml}, spec: {backendFramework: vllm}}`), "cluster")
	if !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "version v9 is not in its profile") {
		t.Errorf("no pod template: err = %v", err)
	}
	// A kind that is no workload stays one at any version.
	_, err = n.Normalize(parseObj(t, `{apiVersion: v2, kind: Service, metadata: {name: s}, spec: {containers: [{name: a, image: "a:1"}]}}`), "cluster")
	if !errors.Is(err, ErrNotWorkload) {
		t.Errorf("service: err = %v", err)
	}
}

func podInputs(t *testing.T, n *Normalizer, name, image string) *schemas.Inputs {
	t.Helper()
	in, err := n.Normalize(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "ml", "labels": map[string]any{"app.kubernetes.io/component": "server"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "engine", "image": image, "args": []any{"--model", "org/m"}}}},
	}, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestGenericComposesChildren(t *testing.T) {
	n := newNormalizer(t, Config{})
	owner := schemas.Workload{Cluster: "default", Namespace: "ml", APIVersion: "flow.example.com/v1", Kind: "Flow", Name: "f", UID: "u-1"}
	digest := "sha256:" + strings.Repeat("ab", 32)
	dep := normalizeWith(t, n, deployment(map[string]any{"name": "server", "image": "vllm/vllm-openai:v0.9.0@" + digest}), nil)

	// Two pods with the same spec count once.
	a, b := podInputs(t, n, "f-abc12", "e:1"), podInputs(t, n, "f-def34", "e:1")
	in := n.Generic(owner, []*schemas.Inputs{b, dep, a})
	if in.Workload != owner || in.Profile != schemas.ProfileGeneric || in.Source != "cluster" {
		t.Errorf("workload %+v profile %q source %q", in.Workload, in.Profile, in.Source)
	}
	wantShape(t, "f", in, `
web [] @Deployment/web:spec.template
  server "vllm/vllm-openai:v0.9.0@`+digest+`" @Deployment/web:spec.template.spec.containers[0]
pod [] @Pod:spec
  engine "e:1" @Pod:spec.containers[0]
`)
	if !reflect.DeepEqual(in.Components[1].Labels, map[string]string{"app.kubernetes.io/component": "server"}) {
		t.Errorf("pod labels = %v", in.Components[1].Labels)
	}
	if len(in.Digests) != 1 || in.Digests[0].Locator != "Deployment/web:spec.template.spec.containers[0].image" {
		t.Errorf("digests = %+v", in.Digests)
	}
	// The children are not changed.
	if a.Components[0].Name != "f-abc12" || a.Components[0].Locator != "spec" || dep.Components[0].Containers[0].Locator != "spec.template.spec.containers[0]" {
		t.Errorf("children modified: %+v %+v", a.Components[0], dep.Components[0])
	}
	// The order of the children does not matter.
	if again := n.Generic(owner, []*schemas.Inputs{a, dep, b}); !reflect.DeepEqual(again, in) {
		t.Errorf("another order gave %s", shape(again))
	}

	// Two different pods: one component each, named by a hash of the spec.
	c := podInputs(t, n, "f-ghi56", "e:2")
	in = n.Generic(owner, []*schemas.Inputs{a, c, b})
	if len(in.Components) != 2 {
		t.Fatalf("components: %s", shape(in))
	}
	podName := regexp.MustCompile(`^pod-[0-9a-f]{8}$`)
	images := map[string]string{}
	for _, comp := range in.Components {
		if !podName.MatchString(comp.Name) || comp.Locator != "Pod:spec" {
			t.Errorf("component %q @%s", comp.Name, comp.Locator)
		}
		images[comp.Name] = comp.Containers[0].Image
	}
	if len(images) != 2 || in.Components[0].Containers[0].Image == in.Components[1].Containers[0].Image {
		t.Errorf("pod components %v", images)
	}
	// The names depend on the spec, not on the pods' names or order.
	d := podInputs(t, n, "f-zzz99", "e:2")
	if again := n.Generic(owner, []*schemas.Inputs{d, a}); !reflect.DeepEqual(again, in) {
		t.Errorf("the same specs from other pods:\n%s\nwant:\n%s", shape(again), shape(in))
	}

	// A child whose kind is Pod in another group is not a pod.
	other := podInputs(t, n, "x", "e:1")
	other.Workload.APIVersion, other.Workload.Name = "example.com/v1", "x"
	in = n.Generic(owner, []*schemas.Inputs{other})
	wantShape(t, "other Pod", in, `
x [] @Pod/x:spec
  engine "e:1" @Pod/x:spec.containers[0]
`)

	// Nothing controlled: no components.
	if in := n.Generic(owner, nil); len(in.Components) != 0 || in.Components == nil {
		t.Errorf("no children: %+v", in.Components)
	}
}

func TestGenericIsBounded(t *testing.T) {
	n := newNormalizer(t, Config{Bounds: Bounds{Items: 2}})
	owner := schemas.Workload{Cluster: "default", Namespace: "ml", APIVersion: "flow.example.com/v1", Kind: "Flow", Name: "f", UID: "u-1"}
	var children []*schemas.Inputs
	for _, name := range []string{"a", "b", "c"} {
		obj := deployment(map[string]any{"name": "server", "image": "e:1"})
		obj["metadata"].(map[string]any)["name"] = name
		children = append(children, normalizeWith(t, n, obj, nil))
	}
	in := n.Generic(owner, children)
	if len(in.Components) != 2 || in.Components[0].Name != "a" || in.Components[1].Name != "b" {
		t.Errorf("components: %s", shape(in))
	}
	if ms := marks(in.Fields); len(ms) != 1 || !strings.HasPrefix(ms[0].Value, "kept 2 of 3 components") {
		t.Errorf("marks = %+v", ms)
	}
}

func TestMayServe(t *testing.T) {
	n := newNormalizer(t, Config{})
	for _, tc := range []struct {
		name string
		ct   schemas.Container
		want bool
	}{
		{"vllm image", schemas.Container{Image: "vllm/vllm-openai:v0.9.0"}, true},
		{"vllm image by digest on a registry", schemas.Container{Image: "docker.io/vllm/vllm-openai@sha256:" + strings.Repeat("0", 64)}, true},
		{"vllm serve in a shell script", schemas.Container{Image: "registry.example.com/team/app:1",
			Command: []string{"/bin/sh", "-c"}, Args: []string{"pip install x && exec vllm serve org/m --port 8000"}}, true},
		{"a --model flag", schemas.Container{Image: "app:1", Args: []string{"--port", "80", "--model", "org/m"}}, true},
		{"a --model= flag", schemas.Container{Image: "app:1", Args: []string{"--model=org/m"}}, true},
		{"MODEL_ID env", schemas.Container{Image: "app:1", Env: []schemas.EnvVar{{Name: "MODEL_ID", Value: "org/m"}}}, true},
		{"MODEL_ID from a secret", schemas.Container{Image: "app:1", Env: []schemas.EnvVar{{Name: "MODEL_ID", From: &schemas.KeyRef{Kind: "secret", Name: "s", Key: "k"}}}}, true},
		{"MODEL_ID empty", schemas.Container{Image: "app:1", Env: []schemas.EnvVar{{Name: "MODEL_ID"}}}, false},
		{"nginx", schemas.Container{Image: "nginx:1.27", Args: []string{"-g", "daemon off;"}}, false},
		{"redis", schemas.Container{Image: "redis:7", Args: []string{"--port", "6379", "--appendonly", "yes"}}, false},
		{"busybox", schemas.Container{Image: "busybox:1.36", Command: []string{"sleep", "3600"}, Env: []schemas.EnvVar{{Name: "PATH", Value: "/bin"}}}, false},
		{"a model word that is no flag", schemas.Container{Image: "busybox:1.36", Command: []string{"echo", "model", "vllm"}}, false},
		{"no image", schemas.Container{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &schemas.Inputs{Components: []schemas.Component{
				{Name: "side", Containers: []schemas.Container{{Image: "busybox:1.36"}}},
				{Name: "main", Containers: []schemas.Container{tc.ct}},
			}}
			if got := n.MayServe(in); got != tc.want {
				t.Errorf("MayServe = %v, want %v", got, tc.want)
			}
		})
	}
	if n.MayServe(&schemas.Inputs{}) {
		t.Error("no containers may serve")
	}
	// Config.Serving adds engines.
	mine := schemas.Container{Image: "registry.example.com/ml/my-engine:3", Args: []string{"--weights", "/w"}}
	in := &schemas.Inputs{Components: []schemas.Component{{Containers: []schemas.Container{mine}}}}
	if n.MayServe(in) {
		t.Error("my-engine served with the built-in signature")
	}
	more := newNormalizer(t, Config{Serving: schemas.ServingSignature{Images: []string{`(^|/)my-engine$`}}})
	if !more.MayServe(in) {
		t.Error("my-engine did not serve with Config.Serving")
	}
	flagged := newNormalizer(t, Config{Serving: schemas.ServingSignature{Flags: []string{"--weights"}}})
	if !flagged.MayServe(in) {
		t.Error("--weights did not serve with Config.Serving.Flags")
	}
	if _, err := NewNormalizer(Config{Serving: schemas.ServingSignature{Commands: []string{"("}}}); err == nil || !strings.Contains(err.Error(), "serving command pattern") {
		t.Errorf("a bad pattern: err = %v", err)
	}
}

// A CR of no known kind that holds no pod template is read by the facts
// its fields state: container-shaped maps, model values under model keys,
// engine names under engine keys (an operator's backend), with the
// version beside one.
func TestGenericFieldsOfACustomResource(t *testing.T) {
	n := newNormalizer(t, Config{})
	in, err := n.Normalize(parseObj(t, `
apiVersion: serving.example.com/v1alpha1
kind: Booster
metadata: {name: b1, namespace: ml}
spec:
  backend:
    type: vLLMDisaggregated
    version: v0.9.2
    modelURI: hf://org/model-a
    cacheURI: hostpath:///tmp/cache
    workers:
    - type: prefill
      image: registry.example.com/engine:1.0
      resources: {limits: {nvidia.com/gpu: "1"}}
      config: {tensor-parallel-size: 2}
    - type: decode
      image: registry.example.com/engine:1.0
      resources: {limits: {nvidia.com/gpu: "1"}}
  owner: team-a
  description: a model server
`), "file:b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if in.Profile != schemas.ProfileGeneric {
		t.Errorf("profile %q", in.Profile)
	}
	got := map[string]string{}
	for _, f := range in.Fields {
		got[f.Name+"@"+f.Locator] = f.Value
	}
	want := map[string]string{
		"engineHint@spec.backend.type":           "vLLMDisaggregated",
		"engineHintVersion@spec.backend.version": "v0.9.2",
		"modelUri@spec.backend.modelURI":         "hf://org/model-a",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	if len(in.Components) != 2 || in.Components[0].Name != "prefill" || !slices.Equal(in.Components[0].Roles, []string{"prefill"}) ||
		in.Components[1].Containers[0].Image != "registry.example.com/engine:1.0" || !slices.Contains(in.Components[1].Containers[0].Accelerators, "nvidia.com/gpu") {
		t.Errorf("components %+v", in.Components)
	}
	// Keys that name nothing of the kind stay unread: no fields, no
	// workload.
	_, err = n.Normalize(parseObj(t, `
apiVersion: net.example.com/v1
kind: Route
metadata: {name: r, namespace: ml}
spec: {host: www.example.com, path: /v1, weight: 10, url: https://example.com/x}
`), "file:r.yaml")
	if !errors.Is(err, ErrUnknownKind) {
		t.Errorf("a route: err = %v", err)
	}
}
