package kube_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream/bustest"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"
)

// widgetProfile adds a two-version test kind to the built-in profiles.
const widgetProfile = `
profiles:
- group: test.bomstream.dev
  kind: Widget
  versions: [v1, v2]
  workload: true
  components:
  - path: spec.template
    name: main
    containers:
    - list: spec.containers
`

// conversionWebhook converts Widgets between v1 and v2 (they have the same
// shape) until it is taken down; then it drops every connection, as a
// webhook whose pods are gone does.
type conversionWebhook struct {
	srv  *httptest.Server
	down atomic.Bool
}

func startWebhook(t *testing.T) *conversionWebhook {
	w := &conversionWebhook{}
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.down.Load() {
			if hj, ok := rw.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
					return
				}
			}
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			var obj map[string]any
			if err := json.Unmarshal(raw.Raw, &obj); err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			obj["apiVersion"] = review.Request.DesiredAPIVersion
			b, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtimeRaw(b))
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(rw).Encode(review)
	}))
	w.srv.StartTLS()
	t.Cleanup(w.srv.Close)
	return w
}

func (w *conversionWebhook) caPEM() []byte {
	cert := w.srv.Certificate()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.bomstream.dev}
spec:
  group: test.bomstream.dev
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: URL/convert
        caBundle: CA
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
`

// A two-version CRD whose conversion webhook stops: the kind turns unhealthy
// within one probe interval while the other kinds keep publishing, no
// tombstone is written for its workloads, and it turns healthy again when
// the webhook returns.
func TestConversionWebhookDown(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	profiles := filepath.Join(dir, "widgets.yaml")
	if err := os.WriteFile(profiles, []byte(widgetProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	h.norm = h.normalizer(profiles)
	hook := startWebhook(t)
	crd := strings.Replace(strings.Replace(widgetCRD, "URL", hook.srv.URL, 1), "CA", encodeBase64(hook.caPEM()), 1)
	crdFile := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(crdFile, []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, err := h.env.ApplyCRDs(ctx, crdFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.env.DeleteCRD(context.Background(), names[0]) })

	ns := h.namespace("hook")
	gvr := schema.GroupVersionResource{Group: "test.bomstream.dev", Version: "v1", Resource: "widgets"}
	for _, n := range []string{"w1", "w2"} {
		var obj map[string]any
		_ = sigsyaml.Unmarshal([]byte("apiVersion: test.bomstream.dev/v1\nkind: Widget\nmetadata: {name: "+n+"}\nspec: {template: {spec: {containers: [{name: vllm, image: 'vllm/vllm-openai:v0.10.1', args: [--model, Qwen/Qwen3-0.6B]}]}}}\n"), &obj)
		h.create(gvr, ns, mustYAML(obj), nil)
	}
	h.deployment(ns, "chat", "vllm/vllm-openai:v0.10.1", 1)
	cfg := h.config()
	cfg.ProbeInterval = time.Second
	r := h.start(cfg, nil, nil)
	bustest.Eventually(t, "the widgets and the deployment", 15*time.Second, func() bool { return h.rec.count() == 3 })
	if in := h.rec.of(ns + "/Widget/w1")[0].Data.Inputs; in.Workload.APIVersion != "test.bomstream.dev/v2" {
		t.Fatalf("widgets watched at %s, want the preferred v2 (so reads convert)", in.Workload.APIVersion)
	}
	const kind = "Widget.test.bomstream.dev"
	healthy := func() bool { err, ok := r.c.Health()[kind]; return ok && err == nil }
	if !healthy() {
		t.Fatalf("widget health before the outage: %v", r.c.Health()[kind])
	}

	hook.down.Store(true)
	downAt := time.Now()
	bustest.Eventually(t, "the widget kind to turn unhealthy", 3*cfg.ProbeInterval, func() bool { return !healthy() })
	t.Logf("unhealthy %s after the webhook went down (probe interval %s): %v", time.Since(downAt).Round(time.Millisecond), cfg.ProbeInterval, r.c.Health()[kind])
	if v := gaugeValue(t, r.reg, "bomstream_watch_healthy", kind); v != 0 {
		t.Errorf("bomstream_watch_healthy{kind=%q} = %v, want 0", kind, v)
	}
	n := h.rec.count()
	h.setImage(ns, "chat", "vllm/vllm-openai:v0.11.0")
	bustest.Eventually(t, "the deployment to keep publishing", 10*time.Second, func() bool { return h.rec.count() == n+1 })

	// A widget deleted while its kind is degraded, and a collector restarted
	// meanwhile: no tombstone for any widget. The restarted collector cannot
	// read widgets (their list neither ends nor fails while the webhook is
	// down), so its first pass comes after SyncTimeout, shortened here.
	if err := h.env.Dynamic.Resource(gvr).Namespace(ns).Delete(h.ctx, "w2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.stop()
	logs := h.logs.Len()
	restart := cfg
	restart.SyncTimeout = 5 * time.Second
	r = h.start(restart, nil, nil)
	// Its first pass, where a tombstone for w2 would be written or held by
	// the guard; then a tombstone pass.
	h.waitReconciled(logs)
	// It cannot see the widgets: it says so, it does not report them whole.
	bustest.Eventually(t, "the restarted collector to report widgets unhealthy", 3*cfg.ProbeInterval, func() bool { return !healthy() })
	if held := gauge(t, r.reg, "bomstream_tombstones_held"); held != 0 {
		t.Errorf("the first pass after the restart held %v tombstones", held)
	}
	h.settle(h.rec, ns, markDeployment)
	for _, ev := range h.rec.all() {
		if ev.IsTombstone() && strings.Contains(ev.Subject, "/Widget/") {
			t.Errorf("tombstone for %s while its kind was degraded", ev.Subject)
		}
	}

	hook.down.Store(false)
	bustest.Eventually(t, "the widget kind to recover", 3*cfg.ProbeInterval+5*time.Second, healthy)
	// Widgets are read again: w2, deleted meanwhile, gets its tombstone.
	bustest.Eventually(t, "the tombstone of w2 once widgets can be read", 30*time.Second, func() bool {
		evs := h.rec.of(ns + "/Widget/w2")
		return len(evs) == 2 && evs[1].IsTombstone()
	})
}
