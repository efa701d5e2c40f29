package kube_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
)

var nimGVR = schema.GroupVersionResource{Group: "apps.nvidia.com", Version: "v1alpha1", Resource: "nimservices"}

func (h *harness) setImage(ns, name, image string) {
	h.t.Helper()
	cur, err := h.env.Client.AppsV1().Deployments(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = image
	if _, err := h.env.Client.AppsV1().Deployments(ns).Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// A CRD installed after the collector started is watched, and its objects
// published, within 10 s, with no restart; deleting it stops that watch and
// leaves the other kinds working.
func TestCRDInstalledAndDeletedAtRunTime(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("nim")
	h.deployment(ns, "chat", "vllm/vllm-openai:v0.10.1", 1)
	r := h.start(h.config(), nil, nil)
	bustest.Eventually(t, "the deployment", 10*time.Second, func() bool { return h.rec.count() == 1 })
	if _, ok := r.c.Health()["NIMService.apps.nvidia.com"]; ok {
		t.Fatal("NIMService watched before its CRD exists")
	}

	start := time.Now()
	crd := h.applySharedCRD("apps.nvidia.com_nimservices.yaml")
	h.create(nimGVR, ns, `
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: llama3}
spec:
  image: {repository: nvcr.io/nim/meta/llama-3.1-8b-instruct, tag: "1.8.5"}
  authSecret: ngc-api-secret
  expose: {service: {type: ClusterIP, port: 8000}}
`, nil)
	key := ns + "/NIMService/llama3"
	bustest.Eventually(t, "the NIMService published", 10*time.Second, func() bool { return len(h.rec.of(key)) == 1 })
	t.Logf("CRD installed to object published: %s", time.Since(start).Round(time.Millisecond))
	if err, ok := r.c.Health()["NIMService.apps.nvidia.com"]; !ok || err != nil {
		t.Errorf("NIMService health = %v, %v", err, ok)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.env.DeleteCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the NIMService watch to stop", 10*time.Second, func() bool {
		_, ok := r.c.Health()["NIMService.apps.nvidia.com"]
		return !ok
	})
	n := h.rec.count()
	h.setImage(ns, "chat", "vllm/vllm-openai:v0.11.0")
	bustest.Eventually(t, "the deployment's change after the CRD went away", 10*time.Second, func() bool { return h.rec.count() > n })
	for k, err := range r.c.Health() {
		if err != nil {
			t.Errorf("kind %s degraded: %v", k, err)
		}
	}
}

// Stopped collector, a workload deleted, collector started: exactly one
// tombstone, nothing else republished.
func TestRestartTombstonesWhatWasDeleted(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("ml")
	for _, n := range []string{"a", "b", "c"} {
		h.deployment(ns, n, "vllm/vllm-openai:v0.10.1", 1)
	}
	r := h.start(h.config(), nil, nil)
	bustest.Eventually(t, "three workloads", 10*time.Second, func() bool { return h.rec.count() == 3 })
	r.stop()
	if err := h.env.Client.AppsV1().Deployments(ns).Delete(h.ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.start(h.config(), nil, nil)
	bustest.Eventually(t, "the tombstone", 10*time.Second, func() bool { return h.rec.count() == 4 })
	evs := h.quiet(3, ns, markDeployment)
	if len(evs) != 1 || !evs[0].IsTombstone() || evs[0].Subject != ns+"/Deployment/b" {
		t.Fatalf("after the restart: %s, want one tombstone for %s/Deployment/b", keys(evs), ns)
	}
}

// Config.Reconciled is called once per session, after the first pass has
// published every workload listed (the collector process frees memory
// there), and not again for later changes.
func TestReconciledAfterTheFirstPass(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("ml")
	for _, n := range []string{"a", "b", "c"} {
		h.deployment(ns, n, "vllm/vllm-openai:v0.10.1", 1)
	}
	var calls, seen atomic.Int64
	cfg := h.config()
	cfg.Reconciled = func() {
		calls.Add(1)
		seen.Store(int64(h.rec.count()))
	}
	h.start(cfg, nil, nil)
	bustest.Eventually(t, "the first pass", 10*time.Second, func() bool { return calls.Load() == 1 })
	if got := seen.Load(); got != 3 {
		t.Fatalf("Reconciled called with %d workloads published, want all 3", got)
	}
	h.deployment(ns, "d", "vllm/vllm-openai:v0.10.1", 1)
	bustest.Eventually(t, "the fourth workload", 10*time.Second, func() bool { return h.rec.count() == 4 })
	h.quiet(4, ns, markDeployment)
	if got := calls.Load(); got != 1 {
		t.Fatalf("Reconciled called %d times, want once", got)
	}
}

// cutTransport is a connection to the API server that can be cut, as when
// the process holding it is killed: nothing it sends arrives any more, so it
// cannot release its Lease.
type cutTransport struct{ cut atomic.Bool }

func (c *cutTransport) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if c.cut.Load() {
				return nil, http.ErrHandlerTimeout
			}
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Two collectors with leader election: exactly one publishes; when it is
// killed, the other takes over within the lease duration (measured from the
// last renewal the killed one could make) and publishes.
func TestLeaderElection(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("ml")
	h.deployment(ns, "a", "vllm/vllm-openai:v0.10.1", 1)
	cfg := h.config()
	cfg.LeaderElection = kube.LeaderElectionConfig{
		Namespace: ns, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}
	recA, recB := &recorder{Publisher: changelog.New(h.bus)}, &recorder{Publisher: changelog.New(h.bus)}
	cutA, cutB := &cutTransport{}, &cutTransport{}
	cfgA, cfgB := cfg, cfg
	cfgA.LeaderElection.Identity, cfgB.LeaderElection.Identity = "a", "b"
	a := h.start(cfgA, cutA.wrap(h.env.Config), recA)
	bustest.Eventually(t, "a to lead", 10*time.Second, func() bool { return a.c.Leading() })
	b := h.start(cfgB, cutB.wrap(h.env.Config), recB)
	bustest.Eventually(t, "the first event", 10*time.Second, func() bool { return recA.count()+recB.count() == 1 })
	h.deployment(ns, "b", "vllm/vllm-openai:v0.10.1", 1)
	bustest.Eventually(t, "the second event", 10*time.Second, func() bool { return recA.count()+recB.count() == 2 })
	// b has tried for the Lease twice more since (each try reads it), and
	// failed: a b that took the Lease would lead, and publish, by then.
	tries := requestCount(t, b.reg, "get", "leases")
	bustest.Eventually(t, "b to try for the Lease twice more", 10*time.Second, func() bool {
		return requestCount(t, b.reg, "get", "leases") >= tries+2
	})
	if recA.count() != 2 || recB.count() != 0 || b.c.Leading() {
		t.Fatalf("a published %d, b published %d (b leading: %v); want only the leader a", recA.count(), recB.count(), b.c.Leading())
	}

	killed := time.Now()
	cutA.cut.Store(true)
	a.stop()
	bustest.Eventually(t, "b to take over", 10*time.Second, func() bool { return b.c.Leading() })
	took := time.Since(killed)
	t.Logf("takeover %s after the kill (lease duration %s, retry period %s)", took.Round(time.Millisecond), cfg.LeaderElection.LeaseDuration, cfg.LeaderElection.RetryPeriod)
	if took > cfg.LeaderElection.LeaseDuration+2*cfg.LeaderElection.RetryPeriod+500*time.Millisecond {
		t.Errorf("takeover took %s, longer than the lease duration %s (plus two retry periods)", took, cfg.LeaderElection.LeaseDuration)
	}
	h.deployment(ns, "c", "vllm/vllm-openai:v0.10.1", 1)
	bustest.Eventually(t, "b to publish", 10*time.Second, func() bool { return len(recB.of(ns+"/Deployment/c")) == 1 })
	if evs := recB.all(); len(evs) != 1 {
		t.Errorf("b published %s, want only the new workload (the others were already on CHANGES)", keys(evs))
	}
	for _, ev := range recB.all() {
		if ev.Type == schemas.TypeDeleted {
			t.Errorf("tombstone after takeover: %s", ev.Subject)
		}
	}
}
