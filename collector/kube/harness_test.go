package kube_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/changelog"
)

// testEnv is one API server for the whole package; each test works in its
// own namespaces and under its own cluster name, and they run one at a time.
var testEnv *kubetest.Env

func TestMain(m *testing.M) {
	// client-go's own log lines (leader election, reflectors) would drown
	// the collector's; the tests read those through zap.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	dir, err := kubetest.Assets()
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "FAIL: integration tests need a real API server:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "integration tests will skip:", err)
		os.Exit(m.Run())
	}
	testEnv, err = kubetest.StartIn(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

func needEnv(t *testing.T) *kubetest.Env {
	t.Helper()
	if testEnv == nil {
		kubetest.Missing(t)
	}
	return testEnv
}

// recorder is the stream as the collector sees it, recording every event
// that was actually appended. The events of the marker workloads of settle
// are kept apart, so that the tests never see them.
type recorder struct {
	collector.Publisher
	mu      sync.Mutex
	events  []schemas.WorkloadChange
	markers []schemas.WorkloadChange
}

func (r *recorder) PublishChange(ctx context.Context, ev schemas.WorkloadChange) (uint64, bool, error) {
	seq, pub, err := r.Publisher.PublishChange(ctx, ev)
	if err == nil && pub {
		r.mu.Lock()
		r.addLocked(ev)
		r.mu.Unlock()
	}
	return seq, pub, err
}

func (r *recorder) AppendChanges(ctx context.Context, appends []changelog.Append) []changelog.AppendResult {
	res := r.Publisher.AppendChanges(ctx, appends)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, ar := range res {
		if ar.Err == nil && ar.Published {
			r.addLocked(appends[i].Event)
		}
	}
	return res
}

// addLocked records one published event, a marker's apart.
func (r *recorder) addLocked(ev schemas.WorkloadChange) {
	if isMarker(ev.Subject) {
		r.markers = append(r.markers, ev)
		return
	}
	r.events = append(r.events, ev)
}

// markerEvents returns the events of one marker workload
// (namespace/kind/name).
func (r *recorder) markerEvents(key string) []schemas.WorkloadChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []schemas.WorkloadChange
	for _, ev := range r.markers {
		if ev.Subject == key {
			out = append(out, ev)
		}
	}
	return out
}

func (r *recorder) all() []schemas.WorkloadChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]schemas.WorkloadChange(nil), r.events...)
}

// of returns the events of one workload (namespace/kind/name).
func (r *recorder) of(key string) []schemas.WorkloadChange {
	var out []schemas.WorkloadChange
	for _, ev := range r.all() {
		if ev.Subject == key {
			out = append(out, ev)
		}
	}
	return out
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.events) }

// harness is one collector over the shared API server and its own stream.
type harness struct {
	t       *testing.T
	markers int // marker workloads created by settle
	env     *kubetest.Env
	cluster string
	label   string // the namespace label that opts in
	bus     *stream.Bus
	rec     *recorder
	norm    *collector.Normalizer
	logs    *observer.ObservedLogs
	obs     zapcore.Core
	ctx     context.Context
}

var clusterSeq int

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := needEnv(t)
	clusterSeq++
	h := &harness{t: t, env: env, cluster: fmt.Sprintf("t%d", clusterSeq), label: fmt.Sprintf("t%d", clusterSeq), ctx: context.Background()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bus, err := stream.Open(ctx, stream.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	h.bus = bus
	h.rec = &recorder{Publisher: changelog.New(bus)}
	h.norm = h.normalizer("")
	h.obs, h.logs = observer.New(zapcore.DebugLevel)
	return h
}

func (h *harness) normalizer(profiles string) *collector.Normalizer {
	n, err := collector.NewNormalizer(collector.Config{Cluster: h.cluster, ProfilesFile: profiles})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) config() kube.Config {
	return kube.Config{
		Cluster:           h.cluster,
		NamespaceSelector: "bomstream.dev/test=" + h.label,
		LeaderElection:    kube.LeaderElectionConfig{Disabled: true},
		Debounce:          20 * time.Millisecond,
		TombstoneInterval: 200 * time.Millisecond,
		ProbeInterval:     time.Second,
		SyncTimeout:       20 * time.Second,
	}
}

// running is a started collector.
type running struct {
	c      *kube.Collector
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func (h *harness) start(cfg kube.Config, rc *rest.Config, pub collector.Publisher) *running {
	h.t.Helper()
	if rc == nil {
		rc = h.env.Config
	}
	if pub == nil {
		pub = h.rec
	}
	reg := prometheus.NewRegistry()
	log := zap.New(zapcore.NewTee(h.obs, testCore(h.t)))
	c, err := kube.New(cfg, rc, h.norm, pub, log, reg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	h.t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.cancel = nil
}

// namespace creates an opted-in namespace with its default service account.
func (h *harness) namespace(name string) string {
	h.t.Helper()
	name = h.cluster + "-" + name
	_, err := h.env.Client.CoreV1().Namespaces().Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{"bomstream.dev/test": h.label},
	}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.env.Client.CoreV1().ServiceAccounts(name).Create(h.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return name
}

func controller(apiVersion, kind, name string, uid types.UID) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes}}
}

func podTemplate(app, image string, args ...string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: image, Args: args}}},
	}
}

func (h *harness) deployment(ns, name, image string, replicas int32) *appsv1.Deployment {
	h.t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image, "--model", "Qwen/Qwen3-0.6B"),
		},
	}
	d, err := h.env.Client.AppsV1().Deployments(ns).Create(h.ctx, d, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// replicaSet and pod play the part of the controllers envtest does not run.
func (h *harness) replicaSet(d *appsv1.Deployment) *appsv1.ReplicaSet {
	h.t.Helper()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-7c5b", Namespace: d.Namespace, OwnerReferences: controller("apps/v1", "Deployment", d.Name, d.UID)},
		Spec:       appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	rs, err := h.env.Client.AppsV1().ReplicaSets(d.Namespace).Create(h.ctx, rs, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return rs
}

func (h *harness) pod(ns, name string, owner []metav1.OwnerReference, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels, OwnerReferences: owner}, Spec: tmpl.Spec}
	p, err := h.env.Client.CoreV1().Pods(ns).Create(h.ctx, p, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// running reports imageIDs in a pod's status, as the kubelet does.
func (h *harness) podRunning(p *corev1.Pod, imageID string) {
	h.t.Helper()
	p, err := h.env.Client.CoreV1().Pods(p.Namespace).Get(h.ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: "docker.io/" + c.Image, ImageID: imageID, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	if _, err := h.env.Client.CoreV1().Pods(p.Namespace).UpdateStatus(h.ctx, p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// markerPrefix starts the names of the marker workloads of settle.
const markerPrefix = "marker-"

// isMarker reports whether an event's subject (namespace/kind/name) is a
// marker workload's.
func isMarker(subject string) bool {
	return strings.HasPrefix(subject[strings.LastIndexByte(subject, '/')+1:], markerPrefix)
}

// markerKind is the kind of a marker workload: that of the objects whose
// changes it follows, which one watch delivers in order.
type markerKind string

const (
	markDeployment markerKind = "Deployment"
	markPod        markerKind = "Pod"
)

// settle returns once the collector that rec records has dealt with every
// change made in ns (to objects of kind) before the call. It creates a
// marker workload of kind in ns and waits for its event: the watch of kind
// delivered the earlier changes first, and the debounced queue handed
// their workloads to the workers before the marker's. Then it deletes the
// marker and waits for its tombstone: a tombstone pass ran after those
// workloads were decided (a debounce, a delete and at least one tombstone
// interval after the marker's event), so what they published or
// tombstoned is recorded by then. The marker's events are not among rec's.
func (h *harness) settle(rec *recorder, ns string, kind markerKind) {
	h.t.Helper()
	h.markers++
	name := fmt.Sprintf("%s%d", markerPrefix, h.markers)
	key := ns + "/" + string(kind) + "/" + name
	var del func(context.Context, string, metav1.DeleteOptions) error
	switch kind {
	case markDeployment:
		h.deployment(ns, name, "vllm/vllm-openai:v0.10.1", 1)
		del = h.env.Client.AppsV1().Deployments(ns).Delete
	case markPod:
		h.pod(ns, name, nil, podTemplate(name, "vllm/vllm-openai:v0.10.1", "--model", "Qwen/Qwen3-0.6B"))
		del = h.env.Client.CoreV1().Pods(ns).Delete
	default:
		h.t.Fatalf("no marker of kind %s", kind)
	}
	bustest.Eventually(h.t, "the event of the marker "+key, 15*time.Second, func() bool { return len(rec.markerEvents(key)) == 1 })
	if err := del(h.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		h.t.Fatal(err)
	}
	bustest.Eventually(h.t, "the tombstone of the marker "+key, 15*time.Second, func() bool {
		evs := rec.markerEvents(key)
		return len(evs) == 2 && evs[1].IsTombstone()
	})
}

// quiet settles the collector (see settle) and reports the events
// published since the first before ones.
func (h *harness) quiet(before int, ns string, kind markerKind) []schemas.WorkloadChange {
	h.t.Helper()
	h.settle(h.rec, ns, kind)
	return h.rec.all()[before:]
}

// logged counts the log entries with message msg from entry since on.
func (h *harness) logged(since int, msg string) int {
	n := 0
	for _, e := range h.logs.All()[since:] {
		if e.Message == msg {
			n++
		}
	}
	return n
}

// waitReconciled waits until a collector has logged its first pass (the
// cluster listed and reconciled) since log entry since.
func (h *harness) waitReconciled(since int) {
	h.t.Helper()
	bustest.Eventually(h.t, "the collector's first pass", 30*time.Second, func() bool { return h.logged(since, "cluster reconciled") > 0 })
}

func keys(evs []schemas.WorkloadChange) string {
	var s []string
	for _, ev := range evs {
		t := "observed"
		if ev.IsTombstone() {
			t = "deleted"
		}
		s = append(s, ev.Subject+" "+t)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func testCore(t *testing.T) zapcore.Core {
	return zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(testWriter{t}), zapcore.InfoLevel)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
