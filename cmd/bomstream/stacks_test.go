package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
)

// stackCRDs are the custom resources of the serving stacks whose upstream
// CRDs ../shared does not hold: minimal structural ones that keep every
// field, enough for the collector, which reads objects by their profiles.
var stackCRDs = []kubetest.CRD{
	{Group: "kubeai.org", Kind: "Model", Plural: "models", Versions: []string{"v1"}},
	{Group: "kaito.sh", Kind: "Workspace", Plural: "workspaces", Versions: []string{"v1beta1", "v1alpha1"}},
	{Group: "kaito.sh", Kind: "InferenceSet", Plural: "inferencesets", Versions: []string{"v1beta1", "v1alpha1"}},
	{Group: "ray.io", Kind: "RayService", Plural: "rayservices", Versions: []string{"v1"}},
	{Group: "ray.io", Kind: "RayCluster", Plural: "rayclusters", Versions: []string{"v1"}},
	{Group: "mlops.seldon.io", Kind: "Server", Plural: "servers", Versions: []string{"v1alpha1"}},
	{Group: "mlops.seldon.io", Kind: "Model", Plural: "models", Versions: []string{"v1alpha1"}},
	{Group: "mlops.seldon.io", Kind: "ServerConfig", Plural: "serverconfigs", Versions: []string{"v1alpha1"}},
	{Group: "mlops.seldon.io", Kind: "SeldonRuntime", Plural: "seldonruntimes", Versions: []string{"v1alpha1"}},
	{Group: "argoproj.io", Kind: "Rollout", Plural: "rollouts", Versions: []string{"v1alpha1"}},
	{Group: "serving.knative.dev", Kind: "Service", Plural: "services", Versions: []string{"v1"}},
	{Group: "serving.knative.dev", Kind: "Configuration", Plural: "configurations", Versions: []string{"v1"}},
	{Group: "serving.knative.dev", Kind: "Revision", Plural: "revisions", Versions: []string{"v1"}},
	{Group: "serving.kserve.io", Kind: "ServingRuntime", Plural: "servingruntimes", Versions: []string{"v1alpha1"}},
	{Group: "serving.kserve.io", Kind: "ClusterServingRuntime", Plural: "clusterservingruntimes", ClusterScoped: true, Versions: []string{"v1alpha1"}},
	{Group: "serving.kserve.io", Kind: "TrainedModel", Plural: "trainedmodels", Versions: []string{"v1alpha1"}},
}

// stackRow is one row of transformer/testdata/expected.
type stackRow struct {
	File     string   `json:"file"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Runtimes []string `json:"runtimes"`
	Models   []string `json:"models"`
	Revision string   `json:"revision"`
	Roles    []string `json:"roles"`
	Skipped  bool     `json:"skipped"`
	Note     string   `json:"note"`
}

// The custom resources of the field's serving stacks (the project's own
// corpus, transformer/testdata/manifests/stacks-operators.yaml, written in
// the shapes their docs show) on a real API server, with the objects their
// operators create controlled by them: `run --kubeconfig --once` finds in
// each the runtimes and models its row of the expectation table gives, as
// the manifest renderer does; the objects the table skips (rolled up,
// claimed, runtime templates, models bound to a server) get no BOM; and a
// Seldon Model or a KServe runtime edited afterwards changes the BOM of the
// workload that reads it.
func TestRunKubeconfigStacks(t *testing.T) {
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shared, err := kubetest.SharedCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ApplyCRDs(ctx, filepath.Join(shared, "serving.kserve.io_inferenceservices.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.MinimalCRDs(ctx, stackCRDs...); err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join("..", "..", "transformer", "testdata", "manifests", "stacks-operators.yaml")
	where := stackNamespaces(t, corpus)
	for _, ns := range where {
		makeNamespace(t, env, ns)
	}
	if _, err := env.CreateManifests(ctx, "default", corpus); err != nil {
		t.Fatal(err)
	}

	c := newCLI(t)
	dir := t.TempDir()
	sinkDir, dataDir := filepath.Join(dir, "boms"), filepath.Join(dir, "data")
	args := []string{"run", "--kubeconfig", env.Kubeconfig, "--cluster", "envtest", "--once", "--all-namespaces", "--sink-dir", sinkDir, "--data-dir", dataDir}
	r := c.mustRun(args...)
	t.Logf("run --kubeconfig --once:\n%s", r.stdout)

	rows := readStackRows(t, filepath.Join("..", "..", "transformer", "testdata", "expected", "stacks-operators.yaml"))
	served := 0
	for _, row := range rows {
		ns := where[row.Kind+"/"+row.Name]
		path := filepath.Join(sinkDir, "envtest", ns, row.Kind, row.Name, "latest.cdx.json")
		b, err := os.ReadFile(path)
		if row.Skipped {
			if err == nil {
				t.Errorf("%s %s/%s: a BOM, and the table says none (%s)", row.Kind, ns, row.Name, row.Note)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s/%s: no BOM: %v", row.Kind, ns, row.Name, err)
			continue
		}
		served++
		runtimes, models := bomSummary(t, b)
		want := slices.Clone(row.Runtimes)
		slices.Sort(want)
		if !slices.Equal(runtimes, want) {
			t.Errorf("%s %s/%s: runtimes %v, want %v", row.Kind, ns, row.Name, runtimes, want)
		}
		wantModels := slices.Clone(row.Models)
		slices.Sort(wantModels)
		if !slices.Equal(models, wantModels) {
			t.Errorf("%s %s/%s: models %v, want %v", row.Kind, ns, row.Name, models, wantModels)
		}
	}
	if served < 20 {
		t.Errorf("%d workloads served, want every non-skipped row", served)
	}
	// Nothing else: no object an operator created, no generic double.
	if n := countBOMFiles(t, sinkDir); n != served {
		t.Errorf("%d BOM files, want one per served row (%d)", n, served)
	}
	mustContain(t, "summary", r.stdout, "seldon-mesh/Server/seldon-mlserver", "kubeai/Model/kubeai-qwen", "ray/RayService/rs-qwen-llm")

	// Edit what others read: a Seldon Model moves to another storage URI, a
	// KServe runtime to another vLLM image. The Server and the
	// InferenceService change; nothing else does.
	models := env.Dynamic.Resource(gvr("mlops.seldon.io", "v1alpha1", "models"))
	m, err := models.Namespace(where["Model/seldon-iris"]).Get(ctx, "seldon-iris", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Object["spec"].(map[string]any)["storageUri"] = "gs://seldon-models-example/scv2/iris-sklearn-v2"
	if _, err := models.Namespace(m.GetNamespace()).Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	runtimes := env.Dynamic.Resource(gvr("serving.kserve.io", "v1alpha1", "servingruntimes"))
	sr, err := runtimes.Namespace(where["ServingRuntime/vllm-openai-runtime"]).Get(ctx, "vllm-openai-runtime", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctr := sr.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	ctr["image"] = "vllm/vllm-openai:v0.11.0"
	if _, err := runtimes.Namespace(sr.GetNamespace()).Update(ctx, sr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = c.mustRun(args...)
	mustContain(t, "after the edits", r.stdout, "2 new events, 0 tombstones", "sink file: 2 exported")
	b, err := os.ReadFile(filepath.Join(sinkDir, "envtest", where["Server/seldon-mlserver"], "Server", "seldon-mlserver", "latest.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, models := bomSummary(t, b); !slices.Contains(models, "gs://seldon-models-example/scv2/iris-sklearn-v2") {
		t.Errorf("the server's models after the edit: %v", models)
	}
	b, err = os.ReadFile(filepath.Join(sinkDir, "envtest", where["InferenceService/isvc-vllm-explicit"], "InferenceService", "isvc-vllm-explicit", "latest.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rts, _ := bomSummary(t, b); !slices.Contains(rts, "vllm@0.11.0/declared") {
		t.Errorf("the inference service's runtimes after the runtime's edit: %v", rts)
	}
}

// stackNamespaces maps kind/name to the namespace of each object of a
// manifest file ("default" when it names none), and lists each namespace
// under its own name too.
func stackNamespaces(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for doc := range strings.SplitSeq(string(b), "\n---") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind == "" {
			continue
		}
		ns := obj.Metadata.Namespace
		if ns == "" && obj.Kind != "ClusterServingRuntime" {
			ns = "default"
		}
		out[obj.Kind+"/"+obj.Metadata.Name] = ns
		if ns != "" {
			out[ns] = ns
		}
	}
	return out
}

func makeNamespace(t *testing.T, env *kubetest.Env, ns string) {
	t.Helper()
	if ns == "" || strings.Contains(ns, "/") {
		return
	}
	ctx := context.Background()
	_, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func readStackRows(t *testing.T, file string) []stackRow {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rows []stackRow
	if err := sigsyaml.UnmarshalStrict(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal(errors.New("no rows"))
	}
	return rows
}

// bomSummary reads a BOM's runtimes (name@version/confidence, sorted) and
// model names (sorted).
func bomSummary(t *testing.T, b []byte) (runtimes, models []string) {
	t.Helper()
	var doc struct {
		Components []struct {
			Type       string `json:"type"`
			Name       string `json:"name"`
			Version    string `json:"version"`
			Properties []struct{ Name, Value string }
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Components {
		props := map[string]string{}
		for _, p := range c.Properties {
			props[p.Name] = p.Value
		}
		switch {
		case c.Type == "machine-learning-model":
			models = append(models, c.Name)
		case props["bomstream:runtime:name"] != "":
			runtimes = append(runtimes, props["bomstream:runtime:name"]+"@"+c.Version+"/"+props["bomstream:confidence"])
		}
	}
	slices.Sort(runtimes)
	slices.Sort(models)
	return runtimes, models
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// The generic fallback end to end: a custom resource of a kind no profile
// describes, owning a Deployment whose pods run vLLM, and another owning
// its pods directly, are each one BOM under their own kind (not the
// Deployment's, not the pods'); one whose pods serve nothing gives
// nothing; the summary counts them by kind.
func TestRunKubeconfigGeneric(t *testing.T) {
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := env.MinimalCRDs(ctx, kubetest.CRD{Group: "serving.example.com", Kind: "LLMApp", Plural: "llmapps", Versions: []string{"v1"}}); err != nil {
		t.Fatal(err)
	}
	shared, err := kubetest.SharedCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ApplyCRDs(ctx, filepath.Join(shared, "leaderworkerset.x-k8s.io_leaderworkersets.yaml")); err != nil {
		t.Fatal(err)
	}
	makeNamespace(t, env, "apps")
	file := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(file, []byte(genericObjects), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateManifests(ctx, "apps", file); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	dir := t.TempDir()
	sinkDir := filepath.Join(dir, "boms")
	r := c.mustRun("run", "--kubeconfig", env.Kubeconfig, "--cluster", "envtest", "--once", "--all-namespaces", "--sink-dir", sinkDir, "--data-dir", filepath.Join(dir, "data"))
	t.Logf("%s", r.stdout)
	mustContain(t, "summary", r.stdout, "apps/LLMApp/chat", "apps/LLMApp/embed", "vllm@0.10.1", "BAAI/bge-small-en-v1.5",
		"2 serving workloads of kinds with no profile, read by the generic profile: LLMApp.serving.example.com 2")
	for _, not := range []string{"apps/Deployment/chat-server", "apps/Pod/", "apps/LLMApp/static", "apps/StatefulSet/", "apps/ReplicaSet/"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("%s reported:\n%s", not, r.stdout)
		}
	}
	// Kinds with a profile keep it, once: the LeaderWorkerSet and the
	// Deployment nothing owns, not their StatefulSet, ReplicaSet or pods.
	mustContain(t, "summary", r.stdout, "apps/LeaderWorkerSet/lws-llama", "apps/Deployment/tgi")
	if n := countBOMFiles(t, sinkDir); n != 4 {
		t.Errorf("BOM files = %d, want 4 (two LLMApps, the LeaderWorkerSet, the Deployment)", n)
	}
	for _, p := range []string{"LeaderWorkerSet/lws-llama", "Deployment/tgi"} {
		b, err := os.ReadFile(filepath.Join(sinkDir, "envtest", "apps", p, "latest.cdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"generic"`) {
			t.Errorf("%s is marked generic", p)
		}
	}
	b, err := os.ReadFile(filepath.Join(sinkDir, "envtest", "apps", "LLMApp", "chat", "latest.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"name":"bomstream:profile","value":"generic"}`) {
		t.Errorf("the BOM is not marked generic:\n%s", b)
	}
}

// genericObjects are custom resources of an unknown kind and what their
// operator would create (owner references are filled in by CreateManifests).
const genericObjects = `
apiVersion: serving.example.com/v1
kind: LLMApp
metadata: {name: chat}
spec: {model: qwen}
---
apiVersion: serving.example.com/v1
kind: LLMApp
metadata: {name: embed}
spec: {model: bge}
---
apiVersion: serving.example.com/v1
kind: LLMApp
metadata: {name: static}
spec: {site: docs}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat-server
  ownerReferences: [{apiVersion: serving.example.com/v1, kind: LLMApp, name: chat, uid: x, controller: true}]
spec:
  selector: {matchLabels: {app: chat}}
  template:
    metadata: {labels: {app: chat}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1
        args: [--model, Qwen/Qwen3-0.6B]
---
apiVersion: v1
kind: Pod
metadata:
  name: embed-7f9c2
  ownerReferences: [{apiVersion: serving.example.com/v1, kind: LLMApp, name: embed, uid: x, controller: true}]
spec:
  containers:
  - name: tei
    image: ghcr.io/huggingface/text-embeddings-inference:1.5
    args: [--model-id, BAAI/bge-small-en-v1.5]
---
apiVersion: v1
kind: Pod
metadata:
  name: embed-a41d0
  ownerReferences: [{apiVersion: serving.example.com/v1, kind: LLMApp, name: embed, uid: x, controller: true}]
spec:
  containers:
  - name: tei
    image: ghcr.io/huggingface/text-embeddings-inference:1.5
    args: [--model-id, BAAI/bge-small-en-v1.5]
---
apiVersion: v1
kind: Pod
metadata:
  name: static-1
  ownerReferences: [{apiVersion: serving.example.com/v1, kind: LLMApp, name: static, uid: x, controller: true}]
spec:
  containers:
  - {name: web, image: nginx:1.27}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws-llama}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          args: [--model, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size, "2"]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: lws-llama
  labels: {leaderworkerset.sigs.k8s.io/name: lws-llama}
  ownerReferences: [{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, name: lws-llama, uid: x, controller: true}]
spec:
  serviceName: lws-llama
  selector: {matchLabels: {app: lws-llama}}
  template:
    metadata: {labels: {app: lws-llama}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1
        args: [--model, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size, "2"]
---
apiVersion: v1
kind: Pod
metadata:
  name: lws-llama-0
  labels: {leaderworkerset.sigs.k8s.io/name: lws-llama}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: lws-llama, uid: x, controller: true}]
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.10.1
    args: [--model, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size, "2"]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: tgi}
spec:
  selector: {matchLabels: {app: tgi}}
  template:
    metadata: {labels: {app: tgi}}
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:3.0.1
        args: [--model-id, HuggingFaceTB/SmolLM2-360M-Instruct]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: tgi-5d8f
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: tgi, uid: x, controller: true}]
spec:
  selector: {matchLabels: {app: tgi}}
  template:
    metadata: {labels: {app: tgi}}
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:3.0.1
        args: [--model-id, HuggingFaceTB/SmolLM2-360M-Instruct]
---
apiVersion: v1
kind: Pod
metadata:
  name: tgi-5d8f-x1
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: tgi-5d8f, uid: x, controller: true}]
spec:
  containers:
  - name: tgi
    image: ghcr.io/huggingface/text-generation-inference:3.0.1
    args: [--model-id, HuggingFaceTB/SmolLM2-360M-Instruct]
`

// The same from manifests: objects of kinds with no profile are read by
// the pod templates they hold; the summary counts those that serve, by
// kind, and the one that serves nothing (an nginx site) gets no BOM.
func TestRunManifestsGeneric(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "transformer", "testdata", "manifests", "generic.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "generic.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	sinkDir := filepath.Join(t.TempDir(), "boms")
	r := c.mustRun("run", "--manifests", dir, "--once", "--sink-dir", sinkDir, "--data-dir", t.TempDir())
	mustContain(t, "summary", r.stdout, "ModelDeployment/gen-vllm-modeldeployment", "LLMServer/gen-tgi-llmserver",
		"6 serving workloads of kinds with no profile, read by the generic profile: DisaggDeployment.disagg.example.org 1, ")
	if strings.Contains(r.stdout, "gen-nginx-staticsite") {
		t.Errorf("a static site served:\n%s", r.stdout)
	}
	if n := countBOMFiles(t, sinkDir); n != 6 {
		t.Errorf("BOM files = %d, want 6", n)
	}
}
