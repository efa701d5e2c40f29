package kube_test

import (
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream/bustest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// settle (through quiet) returns only after what the changes made just
// before it published: an image change, a pod's imageID, a deletion's
// tombstone, each seen with no other wait. The tests that assert that
// nothing was published rely on this.
func TestSettleSeesEarlierChanges(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("ml")
	d := h.deployment(ns, "chat", "vllm/vllm-openai:v0.10.1", 1)
	rs := h.replicaSet(d)
	pod := h.pod(ns, "chat-7c5b-x1", controller("apps/v1", "ReplicaSet", rs.Name, rs.UID), d.Spec.Template)
	h.start(h.config(), nil, nil)
	key := ns + "/Deployment/chat"
	bustest.Eventually(t, "the deployment's first event", 10*time.Second, func() bool { return len(h.rec.of(key)) == 1 })

	n := h.rec.count()
	h.setImage(ns, "chat", "vllm/vllm-openai:v0.11.0")
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 1 || evs[0].Subject != key {
		t.Fatalf("after an image change, settled: %s, want one event of %s", keys(evs), key)
	}
	n = h.rec.count()
	h.podRunning(pod, "docker.io/vllm/vllm-openai@"+digestA)
	if evs := h.quiet(n, ns, markPod); len(evs) != 1 || evs[0].Subject != key {
		t.Fatalf("after a pod reported its imageID, settled: %s, want one event of %s", keys(evs), key)
	}
	n = h.rec.count()
	if err := h.env.Client.AppsV1().Deployments(ns).Delete(h.ctx, "chat", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 1 || !evs[0].IsTombstone() {
		t.Fatalf("after a deletion, settled: %s, want the tombstone of %s", keys(evs), key)
	}
}
