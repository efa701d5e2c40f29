package kube_test

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/stream/bustest"
)

// installRBAC creates the documented namespaced Roles (deploy/rbac/namespaced.yaml)
// for a collector in collectorNS watching workloadNS, and returns a client
// configuration that acts as its ServiceAccount.
func (h *harness) installRBAC(collectorNS, workloadNS string) *rest.Config {
	h.t.Helper()
	raw, err := os.ReadFile("../../deploy/rbac/namespaced.yaml")
	if err != nil {
		h.t.Fatal(err)
	}
	text := strings.NewReplacer("WORKLOADS", workloadNS, "COLLECTOR", collectorNS, "CLUSTER", h.cluster).Replace(string(raw))
	if _, err := h.env.Client.CoreV1().ServiceAccounts(collectorNS).Create(h.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bomstream-collector"}}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	for doc := range strings.SplitSeq(text, "\n---\n") {
		var meta metav1.TypeMeta
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			h.t.Fatal(err)
		}
		switch meta.Kind {
		case "Role":
			var r rbacv1.Role
			if err := sigsyaml.Unmarshal([]byte(doc), &r); err != nil {
				h.t.Fatal(err)
			}
			if _, err := h.env.Client.RbacV1().Roles(r.Namespace).Create(h.ctx, &r, metav1.CreateOptions{}); err != nil {
				h.t.Fatal(err)
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := sigsyaml.Unmarshal([]byte(doc), &b); err != nil {
				h.t.Fatal(err)
			}
			if _, err := h.env.Client.RbacV1().RoleBindings(b.Namespace).Create(h.ctx, &b, metav1.CreateOptions{}); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	cfg := rest.CopyConfig(h.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + collectorNS + ":bomstream-collector",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + collectorNS, "system:authenticated"},
	}
	return cfg
}

// The collector as a ServiceAccount bound to the documented namespaced Role,
// running in another namespace than the workloads, works; with `list pods`
// (and watch) taken away it reports the missing permission, keeps the other kinds
// working, does not restart, and writes no tombstone.
func TestNamespacedRBAC(t *testing.T) {
	h := newHarness(t)
	own := h.namespace("bomstream")
	ns := h.namespace("ml")
	sa := h.installRBAC(own, ns)
	d := h.deployment(ns, "chat", "vllm/vllm-openai:v0.10.1", 1)
	rs := h.replicaSet(d)
	p := h.pod(ns, "chat-7c5b-1", controller("apps/v1", "ReplicaSet", rs.Name, rs.UID), d.Spec.Template)
	h.podRunning(p, "docker.io/vllm/vllm-openai@"+digestA)
	solo := podTemplate("solo", "ollama/ollama:0.6.0")
	h.pod(ns, "solo", nil, solo)

	cfg := h.config()
	cfg.NamespaceSelector = ""
	cfg.Namespaces = []string{ns}
	cfg.LeaderElection = kube.LeaderElectionConfig{Namespace: own, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}
	r := h.start(cfg, sa, nil)
	bustest.Eventually(t, "the deployment and the pod", 15*time.Second, func() bool {
		return len(h.rec.of(ns+"/Deployment/chat")) == 1 && len(h.rec.of(ns+"/Pod/solo")) == 1
	})
	if dg := h.rec.of(ns + "/Deployment/chat")[0].Data.Inputs.Digests; len(dg) != 1 {
		t.Errorf("digests = %v", dg)
	}
	for k, err := range r.c.Health() {
		if err != nil {
			t.Errorf("%s degraded with the documented Role: %v", k, err)
		}
	}
	checkNoWrites(t, r)
	r.stop()

	// Take `list pods` away: the collector reads pods with streaming lists
	// (a watch that starts with the current objects), which the API server
	// authorizes as watch, so it keeps working.
	setPodVerbs := func(verbs ...string) {
		role, err := h.env.Client.RbacV1().Roles(ns).Get(h.ctx, "bomstream-collector-read", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.Rules[0].Verbs = verbs
		if _, err := h.env.Client.RbacV1().Roles(ns).Update(h.ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPodVerbs("get", "watch")
	logsBefore := h.logs.Len()
	r = h.start(cfg, sa, nil)
	bustest.Eventually(t, "the collector to lead", 10*time.Second, r.c.Leading)
	// Its first pass (pods listed, or failed), then a new pod seen through
	// the watch.
	h.waitReconciled(logsBefore)
	h.settle(h.rec, ns, markPod)
	if err := r.c.Health()["Pod"]; err != nil {
		t.Errorf("without list but with watch, pods degraded: %v", err)
	}
	r.stop()

	// Take list and watch away: pods cannot be read at all.
	setPodVerbs("get")
	n := h.rec.count()
	logsBefore = h.logs.Len()
	r = h.start(cfg, sa, nil)
	bustest.Eventually(t, "Pod to be degraded", 15*time.Second, func() bool { return r.c.Health()["Pod"] != nil })
	t.Logf("health: %v", r.c.Health()["Pod"])
	bustest.Eventually(t, "the log line naming the permission", 5*time.Second, func() bool {
		for _, e := range h.logs.All()[logsBefore:] {
			m := e.ContextMap()
			if strings.Contains(e.Message, "permission missing") && (m["verb"] == "list" || m["verb"] == "watch") && m["resource"] == "pods" && m["namespace"] == ns {
				return true
			}
		}
		return false
	})
	// Nothing changed: the digests that pods can no longer report are kept,
	// so the restart publishes nothing.
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 0 {
		t.Errorf("restart without pods published %s", keys(evs))
	}
	h.setImage(ns, "chat", "vllm/vllm-openai:v0.11.0")
	bustest.Eventually(t, "the deployment to keep publishing", 10*time.Second, func() bool { return h.rec.count() == n+1 })
	// A tombstone pass since, and the Lease renewed twice more by the same
	// session.
	h.settle(h.rec, ns, markDeployment)
	renewals := requestCount(t, r.reg, "update", "leases")
	bustest.Eventually(t, "two more renewals of the Lease", 10*time.Second, func() bool {
		return requestCount(t, r.reg, "update", "leases") >= renewals+2
	})
	for _, ev := range h.rec.all()[n:] {
		if ev.IsTombstone() {
			t.Errorf("tombstone while pods cannot be listed: %s", ev.Subject)
		}
	}
	if starts := h.logged(logsBefore, "cluster reconciled"); starts != 1 {
		t.Errorf("the collector reconciled %d times: a restart loop", starts)
	}
	if ended := h.logged(logsBefore, "collector session ended; starting again"); ended != 0 {
		t.Errorf("the collector session ended %d times: a restart loop", ended)
	}
	if r.c.Health()["Deployment.apps"] != nil {
		t.Errorf("Deployment degraded: %v", r.c.Health()["Deployment.apps"])
	}
	checkNoWrites(t, r)
}

// checkNoWrites asserts that the collector wrote nothing but its Lease.
func checkNoWrites(t *testing.T, r *running) {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bomstream_kube_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if kube.IsWrite(l["verb"]) && l["resource"] != "leases" {
				t.Errorf("the collector wrote: %s %s (%v times)", l["verb"], l["resource"], m.GetCounter().GetValue())
			}
		}
	}
}
