package kube_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/bustest"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Bad objects produce events or logged skips, never a crash: an owner
// reference with an unknown apiVersion, a DynamoGraphDeployment with an
// empty spec, a 1 MiB args list, an invalid image string, an owner cycle.
func TestBadObjects(t *testing.T) {
	h := newHarness(t)
	h.applyTestCRDs()
	ns := h.namespace("bad")
	rep := int32(1)
	mk := func(name string, owner []metav1.OwnerReference, tmpl func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owner},
			Spec: appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: podTemplate(name, "vllm/vllm-openai:v0.10.1")},
		}
		if tmpl != nil {
			tmpl(d)
		}
		out, err := h.env.Client.AppsV1().Deployments(ns).Create(h.ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return out
	}
	// Owned by an unknown kind at an unknown apiVersion: the generic
	// workload of that owner, named by the owner reference alone.
	mk("odd-owner", controller("example.com/v9", "Widget", "w", types.UID("0b7d7c58-0000-4000-8000-000000000001")), nil)
	// Owned by a known kind at a version nobody serves, which is not there:
	// rolled up into an owner that cannot be seen, so no event, no crash.
	mk("ghost-owned", controller("apps/v9", "Deployment", "ghost", types.UID("0b7d7c58-0000-4000-8000-000000000002")), nil)
	// A 1 MiB argument list: larger than a stream message may be.
	big := make([]string, 0, 1100)
	for range 1100 {
		big = append(big, strings.Repeat("x", 1000))
	}
	mk("huge-args", nil, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = big })
	mk("bad-image", nil, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "UPPER CASE::not/an@image" })
	h.create(dgdGVR, ns, "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: {name: empty}\nspec: {}\n", nil)
	// An owner cycle between two ReplicaSets.
	rsA, err := h.env.Client.AppsV1().ReplicaSets(ns).Create(h.ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cycle-a"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "c"}}, Template: podTemplate("c", "nginx:1.27")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rsB, err := h.env.Client.AppsV1().ReplicaSets(ns).Create(h.ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cycle-b", OwnerReferences: controller("apps/v1", "ReplicaSet", rsA.Name, rsA.UID)},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "c"}}, Template: podTemplate("c", "nginx:1.27")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rsA.OwnerReferences = controller("apps/v1", "ReplicaSet", rsB.Name, rsB.UID)
	if _, err := h.env.Client.AppsV1().ReplicaSets(ns).Update(h.ctx, rsA, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.pod(ns, "cycle-pod", controller("apps/v1", "ReplicaSet", rsA.Name, rsA.UID), podTemplate("c", "nginx:1.27"))
	h.deployment(ns, "good", "vllm/vllm-openai:v0.10.1", 1)

	r := h.start(h.config(), nil, nil)
	for _, key := range []string{"Widget/w", "Deployment/bad-image", "DynamoGraphDeployment/empty", "Deployment/good", "Deployment/huge-args"} {
		bustest.Eventually(t, key, 15*time.Second, func() bool { return len(h.rec.of(ns+"/"+key)) == 1 })
	}
	evs := h.quiet(0, ns, markDeployment)
	for _, ev := range evs {
		switch ev.Subject {
		case ns + "/Deployment/ghost-owned", ns + "/ReplicaSet/cycle-a", ns + "/ReplicaSet/cycle-b", ns + "/Deployment/odd-owner":
			t.Errorf("unexpected event %s", ev.Subject)
		}
	}
	if c := h.rec.of(ns + "/DynamoGraphDeployment/empty")[0].Data.Inputs.Components; len(c) != 0 {
		t.Errorf("empty graph components = %v", c)
	}
	// The oversized workload is one event, its args cut to a bound with the
	// cut marked; the collector and every kind stay up.
	huge := h.rec.of(ns + "/Deployment/huge-args")[0]
	if _, ok := huge.Data.Inputs.Components[0].Field(schemas.FieldTruncated); !ok {
		t.Errorf("the huge args were not marked as cut: %+v", huge.Data.Inputs.Components[0].Fields)
	}
	for k, err := range r.c.Health() {
		if err != nil {
			t.Errorf("%s degraded: %v", k, err)
		}
	}
	n := h.rec.count()
	h.setImage(ns, "good", "vllm/vllm-openai:v0.11.0")
	bustest.Eventually(t, "the collector to keep working", 10*time.Second, func() bool { return h.rec.count() > n })
}
