package kube_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/bustest"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// A Deployment with its ReplicaSet and pod is one workload; then scaling,
// status churn and pod churn publish nothing, while an image change and a
// digest that resolves publish exactly one event each.
func TestDeploymentRollUpAndNoise(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("ml")
	d := h.deployment(ns, "chat", "vllm/vllm-openai:v0.10.1", 1)
	rs := h.replicaSet(d)
	pod := h.pod(ns, "chat-7c5b-x1", controller("apps/v1", "ReplicaSet", rs.Name, rs.UID), d.Spec.Template)
	h.start(h.config(), nil, nil)

	key := ns + "/Deployment/chat"
	bustest.Eventually(t, "the deployment's first event", 10*time.Second, func() bool { return len(h.rec.of(key)) == 1 })
	if evs := h.quiet(0, ns, markDeployment); len(evs) != 1 {
		t.Fatalf("events after start = %s, want only %s (its ReplicaSet and pod are rolled up)", keys(evs), key)
	}
	if d := h.rec.of(key)[0].Data.Inputs.Digests; len(d) != 0 {
		t.Errorf("digests before any pod runs: %v", d)
	}

	// Scaling publishes nothing.
	n := h.rec.count()
	scale, err := h.env.Client.AppsV1().Deployments(ns).GetScale(h.ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if _, err := h.env.Client.AppsV1().Deployments(ns).UpdateScale(h.ctx, "chat", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// 100 status-only updates publish nothing.
	for i := range 100 {
		cur, err := h.env.Client.AppsV1().Deployments(ns).Get(h.ctx, "chat", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.ObservedGeneration = cur.Generation
		cur.Status.Replicas = int32(i%7) + 5
		cur.Status.ReadyReplicas = int32(i % 5)
		if _, err := h.env.Client.AppsV1().Deployments(ns).UpdateStatus(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 0 {
		t.Fatalf("scaling and 100 status updates published %s", keys(evs))
	}

	// The pod reports its imageID: one event, the digest resolved.
	h.podRunning(pod, "docker.io/vllm/vllm-openai@"+digestA)
	bustest.Eventually(t, "the event with the digest", 10*time.Second, func() bool { return len(h.rec.of(key)) == 2 })
	evs := h.quiet(n, ns, markPod)
	if len(evs) != 1 {
		t.Fatalf("the imageID published %s, want one event", keys(evs))
	}
	want := []schemas.ImageDigest{{Image: "vllm/vllm-openai:v0.10.1", Digest: digestA, Locator: "spec.template.spec.containers[0]"}}
	if got := evs[0].Data.Inputs.Digests; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("digests = %+v, want %+v", got, want)
	}

	// The pod is deleted and recreated (rescheduled), running the same image: nothing.
	n = h.rec.count()
	if err := h.env.Client.CoreV1().Pods(ns).Delete(h.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// The deletion is decided on its own before the new pod comes (the
	// digest stays while no pod reports one).
	if evs := h.quiet(n, ns, markPod); len(evs) != 0 {
		t.Fatalf("deleting the pod published %s", keys(evs))
	}
	pod2 := h.pod(ns, "chat-7c5b-x2", controller("apps/v1", "ReplicaSet", rs.Name, rs.UID), d.Spec.Template)
	h.podRunning(pod2, "docker.io/vllm/vllm-openai@"+digestA)
	if evs := h.quiet(n, ns, markPod); len(evs) != 0 {
		t.Fatalf("deleting and recreating the pod published %s", keys(evs))
	}

	// An image tag change: exactly one event.
	cur, err := h.env.Client.AppsV1().Deployments(ns).Get(h.ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "vllm/vllm-openai:v0.11.0"
	if _, err := h.env.Client.AppsV1().Deployments(ns).Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the image change", 10*time.Second, func() bool { return h.rec.count() > n })
	evs = h.quiet(n, ns, markDeployment)
	if len(evs) != 1 || evs[0].Subject != key {
		t.Fatalf("the image change published %s, want one event", keys(evs))
	}
	if img := evs[0].Data.Inputs.Components[0].Containers[0].Image; img != "vllm/vllm-openai:v0.11.0" {
		t.Errorf("image = %s", img)
	}
	if strings.Contains(evs[0].Source, "manifests") || evs[0].Source != "bomstream/cluster/"+h.cluster {
		t.Errorf("source = %q", evs[0].Source)
	}
}
