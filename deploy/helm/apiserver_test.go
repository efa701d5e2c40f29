package helm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
)

// One API server for the package, started by the first test that needs it.
var (
	envOnce sync.Once
	env     *kubetest.Env
	envErr  error
)

func TestMain(m *testing.M) {
	// client-go's own log lines (leader election, reflectors) would drown
	// the tests'.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// apiServer returns the package's API server (kube-apiserver and etcd from
// `make kube-bins`); without the binaries the test skips, or fails under
// CI=true.
func apiServer(t *testing.T) *kubetest.Env {
	t.Helper()
	dir := kubetest.Missing(t)
	envOnce.Do(func() { env, envErr = kubetest.StartIn(dir) })
	if envErr != nil {
		t.Fatal(envErr)
	}
	return env
}

// applier applies rendered objects with server-side apply and strict field
// validation: an unknown or misspelled field is an error, as it is for
// `kubectl apply --server-side`.
type applier struct {
	env      *kubetest.Env
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	warnings *warnings
	cfg      *rest.Config
}

// warnings collects the API server's warnings (PodSecurity's among them).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

func newApplier(t *testing.T, e *kubetest.Env) *applier {
	t.Helper()
	a := &applier{env: e, warnings: &warnings{}}
	a.cfg = rest.CopyConfig(e.Config)
	a.cfg.WarningHandler = a.warnings
	a.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Client.Discovery()))
	return a
}

// apply applies one object; it returns the object's scope as the server
// knows it.
func (a *applier) apply(ctx context.Context, o *unstructured.Unstructured) (clusterScoped bool, err error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		a.mapper.Reset()
		if m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return false, fmt.Errorf("%s: %w", ref(o), err)
		}
	}
	body, err := json.Marshal(o.Object)
	if err != nil {
		return false, err
	}
	dyn, err := newDynamic(a.cfg)
	if err != nil {
		return false, err
	}
	res := dyn.Resource(m.Resource)
	force := true
	opts := metav1.PatchOptions{FieldManager: "bomstream-chart-test", Force: &force, FieldValidation: "Strict"}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		_, err = res.Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, body, opts)
	} else {
		_, err = res.Patch(ctx, o.GetName(), types.ApplyPatchType, body, opts)
	}
	if err != nil {
		return false, fmt.Errorf("apply %s: %w", ref(o), err)
	}
	return m.Scope.Name() == meta.RESTScopeNameRoot, nil
}

// namespace creates a namespace with labels, or leaves an existing one.
func namespace(t *testing.T, e *kubetest.Env, name string, labels map[string]string) {
	t.Helper()
	_, err := e.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// install renders the chart as release name in namespace ns and applies
// every object; the namespaces it names must exist.
func install(t *testing.T, a *applier, name, ns string, sets ...string) rendering {
	t.Helper()
	r := mustRender(t, name, ns, values(t, sets...))
	ctx := context.Background()
	for _, o := range r.objects {
		cs, err := a.apply(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if cs != isClusterScoped(t, o) {
			t.Errorf("%s: the server says cluster-scoped=%v, the footprint table says %v", ref(o), cs, !cs)
		}
	}
	return r
}

// serviceMonitorCRD is a stand-in for prometheus-operator's CRD: the fields
// of monitoring.coreos.com/v1 ServiceMonitor the chart renders, with their
// types as upstream declares them, and nothing else, so that strict field
// validation rejects a field the chart misspells. (The upstream CRD is not
// vendored here.)
func serviceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	strs := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	labels := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}
	relabel := obj(map[string]apiextensionsv1.JSONSchemaProps{"sourceLabels": strs, "targetLabel": str, "action": str, "regex": str, "replacement": str})
	endpoint := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"port": str, "path": str, "interval": str, "scrapeTimeout": str,
		"relabelings": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &relabel}},
	})
	spec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"selector":          obj(map[string]apiextensionsv1.JSONSchemaProps{"matchLabels": labels}),
		"namespaceSelector": obj(map[string]apiextensionsv1.JSONSchemaProps{"matchNames": strs, "any": {Type: "boolean"}}),
		"endpoints":         {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &endpoint}},
	})
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
}

// createCRD creates a CRD unless it exists and waits until it is served.
func createCRD(t *testing.T, e *kubetest.Env, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bustest.Eventually(t, "CRD "+crd.Name+" established", 30*time.Second, func() bool {
		got, err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

// waitPublished waits until the workloads on CHANGES are want.
func waitPublished(t *testing.T, c *kube.Collector, bus *stream.Bus, cluster string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := published(t, bus, cluster)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("on CHANGES:\n  %v\nwant\n  %v\nhealth: %v", got, want, c.Health())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Every object the chart renders applies to a real API server with
// server-side apply and strict field validation, in both shapes and both
// RBAC modes and with every optional object on (ServiceMonitor,
// NetworkPolicy, every sink); the pod templates meet the "restricted" Pod
// Security Standard (the API server warns about templates that do not).
func TestChartAppliesServerSide(t *testing.T) {
	e := apiServer(t)
	a := newApplier(t, e)
	ctx := context.Background()
	createCRD(t, e, serviceMonitorCRD())
	for _, ns := range exampleNamespaces {
		namespace(t, e, ns, nil)
	}
	restricted := map[string]string{"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}

	// The control: a template PodSecurity would refuse is warned about, so
	// a silent server below means compliant templates.
	namespace(t, e, "psa-control", restricted)
	priv := true
	bad := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: "psa-control"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &priv}}}}}},
	}
	u, err := toUnstructured(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.apply(ctx, u); err != nil {
		t.Fatal(err)
	}
	if w := a.warnings.take(); len(w) == 0 {
		t.Fatal("the API server does not warn about a privileged pod template: PodSecurity admission is off, the check below would prove nothing")
	}

	everything := append(append([]string{
		"serviceMonitor.enabled=true", "serviceMonitor.labels.release=prometheus",
		"networkPolicy.enabled=true", "networkPolicy.apiServer.cidrs={10.96.0.1/32}",
		"networkPolicy.nats.to[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=nats",
		"sinks.gcs.egress.to[0].ipBlock.cidr=199.36.153.8/30",
		"sinks.oci.attest=true", "sinks.gcs.attest=true", "signing.keyless.enabled=true",
		"collector.profiles.profiles[0].group=example.com", "collector.profiles.profiles[0].kind=ModelServer",
		"rbac.extraRules[0].apiGroups={example.com}", "rbac.extraRules[0].resources={modelservers}",
		"imagePullSecrets[0].name=ghcr", "podAnnotations.team=ml", "priorityClassName=bomstream-high",
		"api.enabled=true", "api.token.secretName=bomstream-api", "networkPolicy.api.from[0].ipBlock.cidr=10.0.0.0/8",
		// fleet (docs/fleet.md): the edge's link in all-in-one, the hub's edges in distributed
		"fleet.edge.domain=edge-a", "fleet.edge.hub.url=nats-leaf://hub:7422",
		"fleet.edge.hub.auth.secretName=edge-link", "fleet.edge.hub.auth.credsKey=edge.creds",
		"fleet.edge.hub.tls.secretName=hub-ca", "fleet.edge.hub.tls.caKey=ca.crt",
		"fleet.edges[0].domain=edge-b", "fleet.edges[0].cluster=b",
	}, allSinks...), natsAuth...)
	type applyCase struct {
		name string
		v    variant
		more []string
	}
	var cases []applyCase
	for _, v := range variants {
		cases = append(cases, applyCase{v.String(), v, nil}, applyCase{v.String() + "-everything", v, everything})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := fmt.Sprintf("release-%d", i)
			namespace(t, e, ns, restricted)
			a.warnings.take()
			// The release name differs per case, so that the cluster-scoped
			// objects of one case do not replace another's.
			r := install(t, a, fmt.Sprintf("r%d", i), ns, append(append([]string(nil), c.v.sets...), c.more...)...)
			if w := a.warnings.take(); len(w) > 0 {
				t.Errorf("the API server warned:\n  %s", strings.Join(w, "\n  "))
			}
			if len(r.objects) < 5 {
				t.Fatalf("only %d objects", len(r.objects))
			}
			// Applied again: nothing changes, nothing conflicts.
			for _, o := range r.objects {
				if _, err := a.apply(ctx, o); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func toUnstructured(o any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(b)
}

// asServiceAccount is a client configuration that acts as the chart's
// ServiceAccount, as its pod would.
func asServiceAccount(e *kubetest.Env, ns, name string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return cfg
}

// deployment creates a vLLM Deployment.
func deployment(t *testing.T, e *kubetest.Env, ns, name string) {
	t.Helper()
	rep := int32(1)
	_, err := e.Client.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai:v0.10.1", Args: []string{"--model", "Qwen/Qwen3-0.6B"}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// startCollector runs the real collector the way the chart's collector pod
// does: the kubernetes: section and the cluster of the rendered ConfigMap,
// its profiles file, the chart's ServiceAccount (impersonated), the
// release namespace for its Lease; and an embedded JetStream as its stream.
// firstPass is closed when the collector has listed and reconciled the
// cluster for the first time (Config.Reconciled).
func startCollector(t *testing.T, e *kubetest.Env, r rendering, ns string) (c *kube.Collector, bus *stream.Bus, reg *prometheus.Registry, cluster string, firstPass <-chan struct{}) {
	t.Helper()
	cm := convert[corev1.ConfigMap](t, r.one(t, "ConfigMap", configMapName(r)))
	var file struct {
		Cluster    string      `yaml:"cluster"`
		Kubernetes kube.Config `yaml:"kubernetes"`
	}
	dec := yaml.NewDecoder(strings.NewReader(cm.Data["bomstream.yaml"]))
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("bomstream.yaml: %v", err)
	}
	kc := file.Kubernetes
	kc.Cluster = file.Cluster
	passed := make(chan struct{})
	var once sync.Once
	kc.Reconciled = func() { once.Do(func() { close(passed) }) }
	if kc.LeaderElection.Namespace != ns {
		t.Errorf("the Lease would be in %q, not the release namespace %s", kc.LeaderElection.Namespace, ns)
	}
	ncfg := collector.Config{Cluster: file.Cluster}
	if p := cm.Data["profiles.yaml"]; p != "" {
		ncfg.ProfilesFile = t.TempDir() + "/profiles.yaml"
		if err := os.WriteFile(ncfg.ProfilesFile, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	norm, err := collector.NewNormalizer(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bus, err = stream.Open(ctx, stream.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	sa := r.of("ServiceAccount")[0].GetName()
	reg = prometheus.NewRegistry()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	c, err = kube.New(kc, asServiceAccount(e, ns, sa), norm, changelog.New(bus), log, reg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && rctx.Err() == nil {
			t.Errorf("collector: %v", err)
		}
	})
	return c, bus, reg, file.Cluster, passed
}

// waitClosed waits until ch is closed.
func waitClosed(t *testing.T, what string, timeout time.Duration, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func configMapName(r rendering) string { return r.of("ConfigMap")[0].GetName() }

// published lists the workloads whose last event on CHANGES is an
// observation.
func published(t *testing.T, bus *stream.Bus, cluster string) []string {
	t.Helper()
	var out []string
	err := changelog.New(bus).LatestChanges(context.Background(), cluster, func(ev schemas.WorkloadChange, _ uint64) error {
		if !ev.IsTombstone() {
			out = append(out, ev.Subject)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// writes are the collector's write requests but the Lease's.
func writes(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
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
				out = append(out, l["verb"]+" "+l["resource"])
			}
		}
	}
	return out
}

// The collector, running as the chart's ServiceAccount in the release
// namespace with the chart's configuration and RBAC, publishes the
// workloads of the namespaces it is given and no others: in the namespaced
// mode those listed (none is the release namespace), in the cluster mode
// every namespace opted in by label, including a workload of a kind added
// through collector.profiles with its rbac.extraRules. It leads (its Lease
// is in the release namespace), reports no kind degraded, and writes
// nothing but the Lease.
func TestCollectorAsServiceAccount(t *testing.T) {
	e := apiServer(t)
	a := newApplier(t, e)
	ctx := context.Background()
	// Each run (go test -count) has namespaces of its own.
	run := serviceAccountRuns.Add(1)
	named := func(base string) string {
		if run == 1 {
			return base
		}
		return fmt.Sprintf("%s-%d", base, run)
	}

	t.Run("namespaced", func(t *testing.T) {
		own, ml, serving, other := named("ns-bomstream"), named("ns-ml"), named("ns-serving"), named("ns-other")
		for _, ns := range []string{own, ml, serving, other} {
			namespace(t, e, ns, nil)
		}
		r := install(t, a, "bomstream", own, "shape=distributed", "cluster=nsmode", "watch.mode=namespaced", "watch.namespaces={"+ml+","+serving+"}")
		deployment(t, e, ml, "chat")
		deployment(t, e, serving, "embed")
		deployment(t, e, other, "unlisted")
		deployment(t, e, own, "beside-bomstream")
		c, bus, reg, cluster, firstPass := startCollector(t, e, r, own)
		want := []string{ml + "/Deployment/chat", serving + "/Deployment/embed"}
		waitPublished(t, c, bus, cluster, want)
		checkCollector(t, c, reg)
		// The first pass published every workload the collector sees: one
		// of another namespace would be published by then.
		waitClosed(t, "the collector's first pass", time.Minute, firstPass)
		if got := published(t, bus, cluster); !slices.Equal(got, want) {
			t.Errorf("published %v, want %v only", got, want)
		}
	})

	t.Run("cluster", func(t *testing.T) {
		own, a1, a2, off := named("cl-bomstream"), named("cl-team-a"), named("cl-team-b"), named("cl-off")
		namespace(t, e, own, nil)
		namespace(t, e, a1, map[string]string{"bomstream.dev/enabled": "true"})
		namespace(t, e, a2, map[string]string{"bomstream.dev/enabled": "true"})
		namespace(t, e, off, nil)
		// Opted out again at the end: a later run's collector watches every
		// namespace opted in.
		t.Cleanup(func() {
			for _, ns := range []string{a1, a2, off} {
				setLabels(t, e, ns, nil)
			}
		})
		createCRD(t, e, modelServerCRD())
		r := install(t, a, "bomstream-cl", own, "shape=distributed", "cluster=clmode",
			"collector.profiles.profiles[0].group=example.com", "collector.profiles.profiles[0].kind=ModelServer",
			"collector.profiles.profiles[0].workload=true", "collector.profiles.profiles[0].components[0].path=spec.template",
			"collector.profiles.profiles[0].components[0].name=main",
			"collector.profiles.profiles[0].components[0].containers[0].list=spec.containers",
			"rbac.extraRules[0].apiGroups={example.com}", "rbac.extraRules[0].resources={modelservers}")
		deployment(t, e, a1, "chat")
		deployment(t, e, a2, "embed")
		deployment(t, e, off, "not-opted-in")
		ms := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "ModelServer",
			"metadata": map[string]any{"name": "llama", "namespace": a2},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "server", "image": "vllm/vllm-openai:v0.10.1", "args": []any{"--model", "meta-llama/Llama-3.1-8B-Instruct"}},
			}}}},
		}}
		if _, err := e.Dynamic.Resource(modelServers).Namespace(a2).Create(ctx, ms, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c, bus, reg, cluster, firstPass := startCollector(t, e, r, own)
		want := []string{a1 + "/Deployment/chat", a2 + "/Deployment/embed", a2 + "/ModelServer/llama"}
		waitPublished(t, c, bus, cluster, want)
		checkCollector(t, c, reg)
		// Nothing of the namespace not opted in, once the first pass is done.
		waitClosed(t, "the collector's first pass", time.Minute, firstPass)
		if got := published(t, bus, cluster); !slices.Equal(got, want) {
			t.Errorf("published %v before %s opted in, want %v only", got, off, want)
		}
		// A namespace that opts in later is read at once.
		deployment(t, e, off, "late")
		setLabels(t, e, off, map[string]string{"bomstream.dev/enabled": "true"})
		want = []string{a1 + "/Deployment/chat", a2 + "/Deployment/embed", a2 + "/ModelServer/llama", off + "/Deployment/late", off + "/Deployment/not-opted-in"}
		waitPublished(t, c, bus, cluster, want)
		checkCollector(t, c, reg)
	})
}

// serviceAccountRuns counts the runs of TestCollectorAsServiceAccount in
// this process.
var serviceAccountRuns atomic.Int32

// setLabels replaces the labels of a namespace.
func setLabels(t *testing.T, e *kubetest.Env, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	ns, err := e.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels = labels
	if _, err := e.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func checkCollector(t *testing.T, c *kube.Collector, reg *prometheus.Registry) {
	t.Helper()
	if !c.Leading() {
		t.Error("the collector does not hold its Lease")
	}
	for kind, err := range c.Health() {
		if err != nil {
			t.Errorf("%s degraded with the chart's RBAC: %v", kind, err)
		}
	}
	if w := writes(t, reg); len(w) > 0 {
		t.Errorf("the collector wrote: %v", w)
	}
}

var modelServers = schemaGVR("example.com", "v1", "modelservers")

func modelServerCRD() *apiextensionsv1.CustomResourceDefinition {
	yes := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "modelservers.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "modelservers", Singular: "modelserver", Kind: "ModelServer", ListKind: "ModelServerList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &yes,
				}},
			}},
		},
	}
}

// The chart's ServiceAccount may read the workloads it is given and the
// ConfigMaps they read (get, list, watch), and write
// its own Lease, and nothing more: it cannot read a Secret anywhere, write a
// workload, run into a pod, or touch RBAC or webhooks; in the namespaced
// mode it cannot read outside the listed namespaces, nor anything
// cluster-wide. Each answer is the API server's, through
// SubjectAccessReview.
func TestServiceAccountPermissions(t *testing.T) {
	e := apiServer(t)
	a := newApplier(t, e)
	for _, mode := range []string{"cluster", "namespaced"} {
		t.Run(mode, func(t *testing.T) {
			own, ml, other := "sar-"+mode, "sar-"+mode+"-ml", "sar-"+mode+"-other"
			for _, ns := range []string{own, ml, other} {
				namespace(t, e, ns, nil)
			}
			sets := []string{"shape=distributed", "cluster=sar"}
			if mode == "namespaced" {
				sets = append(sets, "watch.mode=namespaced", "watch.namespaces={"+ml+"}")
			}
			r := install(t, a, "sar-"+mode, own, sets...)
			sa := r.of("ServiceAccount")[0].GetName()
			user := "system:serviceaccount:" + own + ":" + sa
			groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + own, "system:authenticated"}
			can := func(verb, group, resource, sub, ns, name string) bool {
				t.Helper()
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user, Groups: groups,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name},
				}}
				got, err := e.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return got.Status.Allowed
			}
			type check struct {
				verb, group, resource, sub, ns, name string
			}
			allowed := []check{
				{"list", "apps", "deployments", "", ml, ""},
				{"watch", "", "pods", "", ml, ""},
				// The ConfigMaps workloads read (env values, start
				// scripts, config files); Secrets never (below).
				{"get", "", "configmaps", "", ml, "model-config"},
				{"list", "", "configmaps", "", ml, ""},
				{"watch", "", "configmaps", "", ml, ""},
				{"get", "serving.kserve.io", "inferenceservices", "", ml, "x"},
				{"create", "coordination.k8s.io", "leases", "", own, ""},
				{"update", "coordination.k8s.io", "leases", "", own, "bomstream-collector-sar"},
			}
			denied := []check{
				{"update", "coordination.k8s.io", "leases", "", own, "someone-elses-lease"},
				{"create", "coordination.k8s.io", "leases", "", ml, ""},
				{"create", "", "pods", "exec", ml, "p"},
				{"create", "rbac.authorization.k8s.io", "rolebindings", "", own, ""},
				{"escalate", "rbac.authorization.k8s.io", "roles", "", own, ""},
				{"create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", ""},
				{"impersonate", "", "serviceaccounts", "", own, "default"},
				{"create", "", "serviceaccounts", "token", own, sa},
				{"update", "", "configmaps", "", own, "sar-" + mode + "-bomstream"},
			}
			for _, ns := range []string{ml, own, other, ""} {
				for _, verb := range []string{"get", "list", "watch"} {
					denied = append(denied, check{verb, "", "secrets", "", ns, ""})
				}
				for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
					denied = append(denied, check{verb, "apps", "deployments", "", ns, ""}, check{verb, "", "pods", "", ns, ""},
						check{verb, "serving.kserve.io", "inferenceservices", "", ns, ""})
				}
				denied = append(denied, check{"update", "apps", "deployments", "scale", ns, ""})
				for _, verb := range []string{"create", "update", "patch", "delete"} {
					denied = append(denied, check{verb, "", "configmaps", "", ns, ""})
				}
			}
			if mode == "cluster" {
				allowed = append(allowed,
					check{"list", "apps", "deployments", "", "", ""}, check{"list", "", "namespaces", "", "", ""},
					check{"watch", "apiextensions.k8s.io", "customresourcedefinitions", "", "", ""}, check{"list", "apps", "deployments", "", other, ""},
					check{"watch", "", "configmaps", "", "", ""})
			} else {
				denied = append(denied,
					check{"list", "apps", "deployments", "", "", ""}, check{"list", "", "namespaces", "", "", ""},
					check{"watch", "", "configmaps", "", "", ""}, check{"get", "", "configmaps", "", other, "x"},
					check{"list", "apiextensions.k8s.io", "customresourcedefinitions", "", "", ""},
					check{"list", "apps", "deployments", "", other, ""}, check{"list", "apps", "deployments", "", own, ""})
			}
			for _, c := range allowed {
				if !can(c.verb, c.group, c.resource, c.sub, c.ns, c.name) {
					t.Errorf("%s may not %s %s/%s/%s in %q (%s), which it needs", sa, c.verb, c.group, c.resource, c.sub, c.ns, c.name)
				}
			}
			for _, c := range denied {
				if can(c.verb, c.group, c.resource, c.sub, c.ns, c.name) {
					t.Errorf("%s MAY %s %s/%s/%s in %q (%s)", sa, c.verb, c.group, c.resource, c.sub, c.ns, c.name)
				}
			}
			// And for real: as the ServiceAccount, a Secret read and a
			// workload write are refused.
			cs, err := newClientset(asServiceAccount(e, own, sa))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Secrets(ml).List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("listing Secrets as the ServiceAccount: %v, want forbidden", err)
			}
			deployment(t, e, ml, "target")
			if err := cs.AppsV1().Deployments(ml).Delete(context.Background(), "target", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("deleting a Deployment as the ServiceAccount: %v, want forbidden", err)
			}
		})
	}
}

func newDynamic(cfg *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) }

func newClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cfg)
}

func schemaGVR(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}
