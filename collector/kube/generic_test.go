package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/bustest"
)

var widgetGVR = schema.GroupVersionResource{Group: "inference.example.com", Version: "v1", Resource: "widgets"}

// widget creates a custom resource of a kind no profile describes.
func (h *harness) widget(ns, name string) *unstructured.Unstructured {
	h.t.Helper()
	return h.create(widgetGVR, ns, "apiVersion: inference.example.com/v1\nkind: Widget\nmetadata:\n  name: "+name+"\nspec:\n  model: anything\n", nil)
}

// A serving pod whose owner chain ends at a kind with no profile is
// reported under that owner, read from the owner references alone: a
// Widget that owns a Deployment running vLLM is one workload of kind
// Widget (not a Deployment); one that owns its pods directly is one
// workload however many pods it runs and however often they are
// re-created; one whose pods serve nothing gives nothing; and a Widget
// that is deleted gets its tombstone.
func TestGenericOwners(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := h.env.MinimalCRDs(ctx, kubetest.CRD{Group: "inference.example.com", Kind: "Widget", Plural: "widgets", Versions: []string{"v1"}}); err != nil {
		t.Fatal(err)
	}
	ns := h.namespace("gen")

	// w1 owns a Deployment (and its ReplicaSet and pod) running vLLM.
	w1 := h.widget(ns, "w1")
	d := h.deployment(ns, "w1-server", "vllm/vllm-openai:v0.10.1", 1)
	d.OwnerReferences = ownedBy(w1)
	d, err := h.env.Client.AppsV1().Deployments(ns).Update(h.ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := h.replicaSet(d)
	p1 := h.pod(ns, "w1-server-7c5b-a", controller("apps/v1", "ReplicaSet", rs.Name, rs.UID), d.Spec.Template)
	h.podRunning(p1, "docker.io/vllm/vllm-openai@"+digestA)

	// w2 owns its pods directly; w3's pods serve nothing.
	w2 := h.widget(ns, "w2")
	tmpl := podTemplate("w2", "lmsysorg/sglang:v0.4.6", "python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-0.6B")
	tmpl.Spec.Containers[0].Command, tmpl.Spec.Containers[0].Args = tmpl.Spec.Containers[0].Args[:3], tmpl.Spec.Containers[0].Args[3:]
	h.pod(ns, "w2-abc12", ownedBy(w2), tmpl)
	w3 := h.widget(ns, "w3")
	h.pod(ns, "w3-abc12", ownedBy(w3), podTemplate("w3", "nginx:1.27"))

	// A StatefulSet of a kind with a profile whose CRD this cluster does
	// not serve (a KAITO Workspace): no watch can read the owner, so it is
	// reported by its reference too, not lost.
	sts := podTemplate("ws", "vllm/vllm-openai:v0.10.1", "--model", "Qwen/Qwen3-0.6B")
	rep := int32(1)
	if _, err := h.env.Client.AppsV1().StatefulSets(ns).Create(h.ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ws", OwnerReferences: controller("kaito.sh/v1beta1", "Workspace", "ws", types.UID("9a8b7c6d-0000-4000-8000-000000000001"))},
		Spec:       appsv1.StatefulSetSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ws"}}, Template: sts},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := h.start(h.config(), nil, nil)
	k1, k2, k3, k4 := ns+"/Widget/w1", ns+"/Widget/w2", ns+"/Widget/w3", ns+"/Workspace/ws"
	bustest.Eventually(t, "the events of w1, w2 and ws", 20*time.Second, func() bool {
		return len(h.rec.of(k1)) == 1 && len(h.rec.of(k2)) == 1 && len(h.rec.of(k4)) == 1
	})
	evs := h.quiet(0, ns, markDeployment)
	if len(evs) != 3 {
		t.Fatalf("events = %s, want exactly %s, %s and %s (no Deployment, StatefulSet, ReplicaSet or pod of their own, nothing for %s)", keys(evs), k1, k2, k4, k3)
	}
	if in := h.rec.of(k4)[0].Data.Inputs; in.Profile != schemas.ProfileGeneric || in.Workload.UID != "9a8b7c6d-0000-4000-8000-000000000001" {
		t.Errorf("the unwatched Workspace: profile %q, identity %+v", in.Profile, in.Workload)
	}
	for _, ev := range evs {
		in := ev.Data.Inputs
		if ev.Subject == k4 {
			continue
		}
		if in.Profile != schemas.ProfileGeneric || in.Workload.APIVersion != "inference.example.com/v1" || in.Workload.Kind != "Widget" {
			t.Errorf("%s: profile %q, identity %+v", ev.Subject, in.Profile, in.Workload)
		}
	}
	in1 := h.rec.of(k1)[0].Data.Inputs
	if in1.Workload.UID != string(w1.GetUID()) || len(in1.Components) != 1 || !strings.HasPrefix(in1.Components[0].Locator, "Deployment/w1-server:") {
		t.Errorf("w1 inputs: uid %s (want %s), components %+v", in1.Workload.UID, w1.GetUID(), in1.Components)
	}
	if len(in1.Digests) != 1 || in1.Digests[0].Digest != digestA {
		t.Errorf("w1 digests from its pod: %+v", in1.Digests)
	}
	in2 := h.rec.of(k2)[0].Data.Inputs
	if len(in2.Components) != 1 || in2.Components[0].Name != "pod" || in2.Components[0].Locator != "Pod:spec" {
		t.Errorf("w2 components: %+v", in2.Components)
	}
	if got := gaugeValue(t, r.reg, "bomstream_generic_workloads", "Widget.inference.example.com"); got != 2 {
		t.Errorf("bomstream_generic_workloads{kind=Widget.inference.example.com} = %v, want 2", got)
	}

	// More pods of w2, and one re-created under a new name: nothing.
	n := h.rec.count()
	h.pod(ns, "w2-def34", ownedBy(w2), tmpl)
	if err := h.env.Client.CoreV1().Pods(ns).Delete(h.ctx, "w2-abc12", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	h.pod(ns, "w2-ghi56", ownedBy(w2), tmpl)
	if evs := h.quiet(n, ns, markPod); len(evs) != 0 {
		t.Fatalf("scaling and re-creating w2's pods published %s", keys(evs))
	}

	// w2's pods all go: the Widget is gone from the inventory.
	for _, name := range []string{"w2-def34", "w2-ghi56"} {
		if err := h.env.Client.CoreV1().Pods(ns).Delete(h.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventually(t, "the tombstone of w2", 10*time.Second, func() bool {
		evs := h.rec.of(k2)
		return len(evs) == 2 && evs[1].IsTombstone()
	})
	if evs := h.rec.of(k1); len(evs) != 1 {
		t.Errorf("w1 events after w2 went: %s", keys(evs))
	}

	// A restart publishes nothing and keeps w1 (its visibility is the pods').
	r.stop()
	n = h.rec.count()
	h.start(h.config(), nil, nil)
	if evs := h.quiet(n, ns, markPod); len(evs) != 0 {
		t.Fatalf("a restart published %s", keys(evs))
	}
}
