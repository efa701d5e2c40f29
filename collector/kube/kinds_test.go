package kube_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/transformer"
)

var (
	dgdGVR  = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1beta1", Resource: "dynamographdeployments"}
	dgdV1a1 = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "dynamographdeployments"}
	dcdGVR  = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "dynamocomponentdeployments"}
	pcsGVR  = schema.GroupVersionResource{Group: "grove.io", Version: "v1alpha1", Resource: "podcliquesets"}
	pcsgGVR = schema.GroupVersionResource{Group: "grove.io", Version: "v1alpha1", Resource: "podcliquescalinggroups"}
	pclqGVR = schema.GroupVersionResource{Group: "grove.io", Version: "v1alpha1", Resource: "podcliques"}
	lwsGVR  = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
)

func (h *harness) applyTestCRDs() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := h.env.ApplyCRDs(ctx, "testdata/crds"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) applySharedCRD(file string) string {
	h.t.Helper()
	dir, err := kubetest.SharedCRDs()
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := h.env.ApplyCRDs(ctx, filepath.Join(dir, file))
	if err != nil {
		h.t.Fatal(err)
	}
	return names[0]
}

// create makes an object from YAML, setting its namespace and controller.
func (h *harness) create(gvr schema.GroupVersionResource, ns, doc string, owner []metav1.OwnerReference) *unstructured.Unstructured {
	h.t.Helper()
	var obj map[string]any
	if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
		h.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	if owner != nil {
		u.SetOwnerReferences(owner)
	}
	out, err := h.env.Dynamic.Resource(gvr).Namespace(ns).Create(h.ctx, u, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	return out
}

func ownedBy(u *unstructured.Unstructured) []metav1.OwnerReference {
	return controller(u.GetAPIVersion(), u.GetKind(), u.GetName(), u.GetUID())
}

const dgdBeta = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: llama
spec:
  backendFramework: vllm
  components:
  - name: Frontend
    type: frontend
    podTemplate:
      spec:
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
          command: [python3, -m, dynamo.frontend]
  - name: VllmDecodeWorker
    type: decode
    podTemplate:
      spec:
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B]
status:
  state: pending
`

// A DynamoGraphDeployment with Grove-style children (PodCliqueSet,
// PodCliqueScalingGroup, PodCliques), component deployments and pods is one
// workload with one BOM; a LeaderWorkerSet with its StatefulSets is one
// workload too. None of the children is published.
func TestRollUpDynamoGroveAndLWS(t *testing.T) {
	h := newHarness(t)
	h.applyTestCRDs()
	h.applySharedCRD("leaderworkerset.x-k8s.io_leaderworkersets.yaml")
	ns := h.namespace("dyn")

	dgd := h.create(dgdGVR, ns, dgdBeta, nil)
	pcs := h.create(pcsGVR, ns, "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: llama}\nspec: {replicas: 1}\n", ownedBy(dgd))
	pcsg := h.create(pcsgGVR, ns, "apiVersion: grove.io/v1alpha1\nkind: PodCliqueScalingGroup\nmetadata: {name: llama-0-decode}\nspec: {replicas: 1}\n", ownedBy(pcs))
	front := h.create(pclqGVR, ns, "apiVersion: grove.io/v1alpha1\nkind: PodClique\nmetadata: {name: llama-0-frontend}\nspec: {replicas: 1}\n", ownedBy(pcs))
	decode := h.create(pclqGVR, ns, "apiVersion: grove.io/v1alpha1\nkind: PodClique\nmetadata: {name: llama-0-decode-0-worker}\nspec: {replicas: 1}\n", ownedBy(pcsg))
	tmpl := podTemplate("llama", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1")
	p1 := h.pod(ns, "llama-0-frontend-abc", ownedBy(front), tmpl)
	p2 := h.pod(ns, "llama-0-decode-0-worker-abc", ownedBy(decode), tmpl)
	// A component deployment of the graph, and the Deployment it manages.
	dcd := h.create(dcdGVR, ns, `
apiVersion: nvidia.com/v1alpha1
kind: DynamoComponentDeployment
metadata: {name: llama-planner}
spec:
  backendFramework: vllm
  componentType: planner
  extraPodSpec:
    mainContainer:
      image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
      command: [python3, -m, dynamo.planner]
`, ownedBy(dgd))
	rep := int32(1)
	dep, err := h.env.Client.AppsV1().Deployments(ns).Create(h.ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "llama-planner", OwnerReferences: ownedBy(dcd)},
		Spec:       appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "llama"}}, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := h.replicaSet(dep)
	p3 := h.pod(ns, "llama-planner-7c5b-1", controller("apps/v1", "ReplicaSet", rs.Name, rs.UID), tmpl)

	// A LeaderWorkerSet (the real CRD) with its StatefulSets and pods.
	lws := h.create(lwsGVR, ns, `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: sglang}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: leader
          image: lmsysorg/sglang:v0.5.2
          command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-8B, --tp, "2"]
    workerTemplate:
      spec:
        containers:
        - name: worker
          image: lmsysorg/sglang:v0.5.2
          command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-8B, --tp, "2"]
`, nil)
	for _, name := range []string{"sglang", "sglang-0"} {
		sts, err := h.env.Client.AppsV1().StatefulSets(ns).Create(h.ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: ownedBy(lws)},
			Spec:       appsv1.StatefulSetSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sglang"}}, Template: podTemplate("sglang", "lmsysorg/sglang:v0.5.2")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h.pod(ns, name+"-0", controller("apps/v1", "StatefulSet", sts.Name, sts.UID), podTemplate("sglang", "lmsysorg/sglang:v0.5.2"))
	}

	h.start(h.config(), nil, nil)
	dgdKey, lwsKey := ns+"/DynamoGraphDeployment/llama", ns+"/LeaderWorkerSet/sglang"
	bustest.Eventually(t, "the graph and the LWS", 15*time.Second, func() bool { return len(h.rec.of(dgdKey)) == 1 && len(h.rec.of(lwsKey)) == 1 })
	h.podRunning(p1, "nvcr.io/nvidia/ai-dynamo/vllm-runtime@"+digestA)
	h.podRunning(p2, "nvcr.io/nvidia/ai-dynamo/vllm-runtime@"+digestA)
	h.podRunning(p3, "nvcr.io/nvidia/ai-dynamo/vllm-runtime@"+digestA)
	bustest.Eventually(t, "the graph's digest", 10*time.Second, func() bool { return len(h.rec.of(dgdKey)) == 2 })
	evs := h.quiet(0, ns, markPod)
	if len(evs) != 3 {
		t.Fatalf("events = %s, want the graph twice (then with its digest) and the LWS once", keys(evs))
	}
	last := h.rec.of(dgdKey)[1]
	if d := last.Data.Inputs.Digests; len(d) == 0 || d[0].Digest != digestA {
		t.Errorf("graph digests = %+v", d)
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range append(h.rec.of(dgdKey)[1:], h.rec.of(lwsKey)...) {
		res, err := r.Render(ev)
		if err != nil || res.BOM == nil {
			t.Errorf("%s renders no BOM: %v", ev.Subject, err)
		}
	}
}

const dgdAlpha = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: alpha
spec:
  backendFramework: sglang
  services:
    Frontend:
      componentType: frontend
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.6.1
          command: [python3, -m, dynamo.frontend]
    decode:
      componentType: worker
      subComponentType: decode
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.6.1
          command: [python3, -m, dynamo.sglang]
          args: [--model-path, Qwen/Qwen3-0.6B]
`

// A DynamoGraphDeployment written as v1alpha1 is watched once, at the
// preferred version v1beta1, where it keeps its v1alpha1 shape (no
// conversion): both shapes normalize, told apart by content.
func TestDynamoBothVersions(t *testing.T) {
	h := newHarness(t)
	h.applyTestCRDs()
	ns := h.namespace("dgd")
	h.create(dgdV1a1, ns, dgdAlpha, nil)
	h.create(dgdGVR, ns, dgdBeta, nil)
	h.start(h.config(), nil, nil)
	bustest.Eventually(t, "both graphs", 15*time.Second, func() bool { return h.rec.count() == 2 })
	for _, name := range []string{"alpha", "llama"} {
		evs := h.rec.of(ns + "/DynamoGraphDeployment/" + name)
		if len(evs) != 1 {
			t.Fatalf("%s: %d events", name, len(evs))
		}
		in := evs[0].Data.Inputs
		if in.Workload.APIVersion != "nvidia.com/v1beta1" {
			t.Errorf("%s watched at %s, want the preferred nvidia.com/v1beta1", name, in.Workload.APIVersion)
		}
		if len(in.Components) != 2 || len(in.Components[1].Containers) != 1 || in.Components[1].Containers[0].Image == "" {
			t.Errorf("%s: components = %+v", name, in.Components)
		}
	}
	if got := h.rec.of(ns + "/DynamoGraphDeployment/alpha")[0].Data.Inputs.Components[1].Roles; len(got) == 0 || got[0] != "worker" {
		t.Errorf("alpha decode roles = %v", got)
	}
}
