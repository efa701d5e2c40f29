package kube_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/transformer"
)

// The values of the Secrets and of the credentials inside the ConfigMaps of
// these tests: none may appear in an event.
var cmSecrets = []string{
	"hf_secretValueNeverRead0123", "c2VjcmV0LXZhbHVl", "hf_rotatedSecretValue4567",
	"sk-inScriptToken0123456789", "sk-inConfigFile0123456789", "sk-envFromKey0123456789",
	"sk-rotatedKey0123456789",
}

// configMap creates (or, when it exists, updates) a ConfigMap.
func (h *harness) configMap(ns, name string, data map[string]string) {
	h.t.Helper()
	cms := h.env.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(h.ctx, name, metav1.GetOptions{})
	if err == nil {
		cm.Data = data
		if _, err := cms.Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	if _, err := cms.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// secret creates (or updates) a Secret.
func (h *harness) secret(ns, name string, data map[string]string) {
	h.t.Helper()
	ss := h.env.Client.CoreV1().Secrets(ns)
	s, err := ss.Get(h.ctx, name, metav1.GetOptions{})
	if err == nil {
		s.StringData = data
		if _, err := ss.Update(h.ctx, s, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	if _, err := ss.Create(h.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// workload creates a Deployment of one container.
func (h *harness) workload(ns, name string, c corev1.Container, volumes ...corev1.Volume) {
	h.t.Helper()
	one := int32(1)
	c.Name = "server"
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: volumes},
			},
		},
	}
	if _, err := h.env.Client.AppsV1().Deployments(ns).Create(h.ctx, d, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func cmRef(name string) *corev1.ConfigMapEnvSource {
	return &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
}

// configMapWorkloads creates, in ns, the workloads and objects of the
// ConfigMap tests:
//   - tgi: a TGI Deployment whose MODEL_ID comes through envFrom from the
//     ConfigMap tgi-config (as OPEA's GenAIInfra manifests do), with its
//     token from the Secret hf-token by secretKeyRef, envFrom secretRef, a
//     secret volume and a projected volume's secret source;
//   - llama: a llama.cpp server whose start script and config file are a
//     mounted ConfigMap, with a token in an argument and an api_key key;
//   - plain: a vLLM Deployment that reads no ConfigMap;
//   - late: a vLLM Deployment whose ConfigMap is created later.
func (h *harness) configMapWorkloads(ns string) {
	h.t.Helper()
	h.secret(ns, "hf-token", map[string]string{"token": "hf_secretValueNeverRead0123", "other": "c2VjcmV0LXZhbHVl"})
	h.configMap(ns, "tgi-config", map[string]string{
		"MODEL_ID": "meta-llama/Llama-3.1-8B-Instruct", "API_KEY": "sk-envFromKey0123456789", "PORT": "80",
	})
	h.configMap(ns, "unread", map[string]string{"MODEL_ID": "nobody/reads-this"})
	h.configMap(ns, "llama-scripts", map[string]string{
		"start.sh":    "#!/bin/sh\nexec llama-server --hf-repo bartowski/Llama-3.2-3B-Instruct-GGUF --port 8080 --api-key sk-inScriptToken0123456789\n",
		"config.yaml": "model: bartowski/Llama-3.2-3B-Instruct-GGUF\napi_key: sk-inConfigFile0123456789\nctx-size: 8192\n",
	})
	secretVol := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "hf-token"}}}
	}
	projected := corev1.Volume{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}}},
	}}}}
	h.workload(ns, "tgi", corev1.Container{
		Image: "ghcr.io/huggingface/text-generation-inference:3.3.4",
		Env: []corev1.EnvVar{{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: "token"}}}},
		EnvFrom:        []corev1.EnvFromSource{{ConfigMapRef: cmRef("tgi-config")}, {SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}}}},
		Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}},
		VolumeMounts:   []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/hf"}, {Name: "projected", MountPath: "/p"}},
	}, secretVol("token"), projected)
	h.workload(ns, "llama", corev1.Container{
		Image:        "ghcr.io/ggml-org/llama.cpp:server",
		Command:      []string{"/bin/sh", "/scripts/start.sh"},
		VolumeMounts: []corev1.VolumeMount{{Name: "scripts", MountPath: "/scripts"}},
	}, corev1.Volume{Name: "scripts", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "llama-scripts"}}}})
	h.workload(ns, "plain", corev1.Container{Image: "vllm/vllm-openai:v0.10.1", Args: []string{"--model", "Qwen/Qwen3-0.6B"}})
	h.workload(ns, "late", corev1.Container{Image: "vllm/vllm-openai:v0.10.1", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: cmRef("late-config")}}})
}

// envFrom is the value a container's first envFrom ConfigMap gives name.
func envFrom(ev schemas.WorkloadChange, name string) (schemas.EnvVar, bool) {
	for _, s := range ev.Data.Inputs.Components[0].Containers[0].EnvFrom {
		for _, e := range s.Env {
			if e.Name == name {
				return e, true
			}
		}
	}
	return schemas.EnvVar{}, false
}

// noSecrets fails for every event that holds a secret value.
func noSecrets(t *testing.T, evs []schemas.WorkloadChange) {
	t.Helper()
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cmSecrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s: %q reached an event", ev.Subject, s)
			}
		}
	}
}

// ConfigMaps are inputs in a cluster: a model a TGI Deployment takes from a
// ConfigMap through envFrom is in its event; the start script and config
// file of a llama.cpp server are, redacted; an edit of the ConfigMap is
// exactly one new version of the workload that reads it and of no other;
// a ConfigMap created after its workload is picked up; a Secret referenced
// the same ways is never read, and no secret reaches an event.
func TestConfigMapsInCluster(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("cm")
	h.configMapWorkloads(ns)
	r := h.start(h.config(), nil, nil)
	tgi, llama, plain, late := ns+"/Deployment/tgi", ns+"/Deployment/llama", ns+"/Deployment/plain", ns+"/Deployment/late"
	bustest.Eventually(t, "the four workloads", 15*time.Second, func() bool { return h.rec.count() == 4 })

	e, ok := envFrom(h.rec.of(tgi)[0], "MODEL_ID")
	if !ok || e.Value != "meta-llama/Llama-3.1-8B-Instruct" || e.From == nil || e.From.Name != "tgi-config" {
		t.Errorf("tgi MODEL_ID = %+v", e)
	}
	if e, _ := envFrom(h.rec.of(tgi)[0], "API_KEY"); !e.Redacted || e.Value != "" {
		t.Errorf("tgi API_KEY = %+v", e)
	}
	files := h.rec.of(llama)[0].Data.Inputs.Components[0].Containers[0].Files
	if len(files) != 2 || files[0].Kind != schemas.FileConfig || files[1].Kind != schemas.FileScript ||
		files[0].Text != "model=bartowski/Llama-3.2-3B-Instruct-GGUF" ||
		!strings.Contains(files[1].Text, "--hf-repo bartowski/Llama-3.2-3B-Instruct-GGUF") ||
		files[1].Locator != `ConfigMap/llama-scripts:data["start.sh"]` {
		t.Errorf("llama files = %+v", files)
	}
	if got := h.rec.of(tgi)[0].Data.Inputs.Components[0].Containers[0]; len(got.Ports) != 1 || len(got.Probes) != 1 || got.Probes[0].Path != "/health" {
		t.Errorf("tgi ports %v probes %v", got.Ports, got.Probes)
	}
	if get := requestCount(t, r.reg, "get", "configmaps"); get != 0 {
		t.Errorf("%v GETs of ConfigMaps at start: the list should have kept what is read", get)
	}

	// An edit of the model: one new version of tgi, none of the others.
	n := h.rec.count()
	h.configMap(ns, "tgi-config", map[string]string{"MODEL_ID": "meta-llama/Llama-3.2-1B-Instruct", "API_KEY": "sk-envFromKey0123456789", "PORT": "80"})
	bustest.Eventually(t, "tgi's new version", 10*time.Second, func() bool { return len(h.rec.of(tgi)) == 2 })
	evs := h.quiet(n, ns, markDeployment)
	if len(evs) != 1 || evs[0].Subject != tgi {
		t.Fatalf("after the edit: %s, want one event of tgi", keys(evs))
	}
	if e, _ := envFrom(evs[0], "MODEL_ID"); e.Value != "meta-llama/Llama-3.2-1B-Instruct" {
		t.Errorf("tgi MODEL_ID after the edit = %+v", e)
	}

	// What is not read changes nothing: a rotated key the inputs redact,
	// a ConfigMap no one reads, the Secret.
	n = h.rec.count()
	h.configMap(ns, "tgi-config", map[string]string{"MODEL_ID": "meta-llama/Llama-3.2-1B-Instruct", "API_KEY": "sk-rotatedKey0123456789", "PORT": "80"})
	h.configMap(ns, "unread", map[string]string{"MODEL_ID": "nobody/reads-this-either"})
	h.secret(ns, "hf-token", map[string]string{"token": "hf_rotatedSecretValue4567"})
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 0 {
		t.Errorf("edits of what is not read published %s", keys(evs))
	}

	// A ConfigMap created after the workload that reads it.
	if e, ok := envFrom(h.rec.of(late)[0], "MODEL_ID"); ok {
		t.Errorf("late has %+v before its ConfigMap exists", e)
	}
	n = h.rec.count()
	h.configMap(ns, "late-config", map[string]string{"MODEL_ID": "Qwen/Qwen3-8B"})
	bustest.Eventually(t, "late's new version", 10*time.Second, func() bool { return len(h.rec.of(late)) == 2 })
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 1 {
		t.Errorf("after late-config: %s, want one event of late", keys(evs))
	}
	if e, _ := envFrom(h.rec.of(late)[1], "MODEL_ID"); e.Value != "Qwen/Qwen3-8B" {
		t.Errorf("late MODEL_ID = %+v", e)
	}
	// A workload created after its ConfigMap, which no one read when it
	// was listed: read with one GET before its first event.
	n = h.rec.count()
	h.workload(ns, "newer", corev1.Container{Image: "vllm/vllm-openai:v0.10.1", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: cmRef("unread")}}})
	bustest.Eventually(t, "newer", 10*time.Second, func() bool { return len(h.rec.of(ns+"/Deployment/newer")) == 1 })
	if e, _ := envFrom(h.rec.of(ns + "/Deployment/newer")[0], "MODEL_ID"); e.Value != "nobody/reads-this-either" {
		t.Errorf("newer MODEL_ID = %+v", e)
	}
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 1 {
		t.Errorf("after newer: %s, want its one event", keys(evs))
	}
	if len(h.rec.of(plain)) != 1 || len(h.rec.of(llama)) != 1 {
		t.Errorf("plain %d and llama %d events, want 1 each", len(h.rec.of(plain)), len(h.rec.of(llama)))
	}

	// The Secret was never asked for, by any verb.
	for _, verb := range []string{"get", "list", "watch"} {
		if c := requestCount(t, r.reg, verb, "secrets"); c != 0 {
			t.Errorf("%v %s requests for secrets", c, verb)
		}
	}
	noSecrets(t, h.rec.all())
	checkNoWrites(t, r)

	// A restart reads the same ConfigMaps and publishes nothing.
	r.stop()
	n = h.rec.count()
	logs := h.logs.Len()
	h.start(h.config(), nil, nil)
	h.waitReconciled(logs)
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 0 {
		t.Errorf("a restart published %s", keys(evs))
	}
}

// The model a TGI Deployment takes from a ConfigMap through envFrom reaches
// its BOM. (This needs the transformer to read ConfigMap-sourced env.)
func TestConfigMapModelInBOM(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace("cmbom")
	h.configMapWorkloads(ns)
	h.start(h.config(), nil, nil)
	tgi := ns + "/Deployment/tgi"
	bustest.Eventually(t, "tgi", 15*time.Second, func() bool { return len(h.rec.of(tgi)) == 1 })
	rd, err := transformer.NewRenderer(transformer.Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rd.Render(h.rec.of(tgi)[0])
	if err != nil || res.BOM == nil {
		t.Fatalf("tgi renders no BOM: %v", err)
	}
	if !slices.Contains(res.Summary.Models, "meta-llama/Llama-3.1-8B-Instruct") {
		t.Errorf("tgi BOM models %v, want the ConfigMap's meta-llama/Llama-3.1-8B-Instruct", res.Summary.Models)
	}
	for _, s := range cmSecrets {
		if strings.Contains(string(res.BOM), s) {
			t.Errorf("%q reached the BOM", s)
		}
	}
}

// In the namespace-restricted mode, under the documented Roles: the
// ServiceAccount may get, list and watch ConfigMaps and not Secrets (the
// API server's SubjectAccessReview), the collector reads the ConfigMaps
// its workloads read and is healthy, and an edit is one new version.
func TestConfigMapsNamespaced(t *testing.T) {
	h := newHarness(t)
	own := h.namespace("cmown")
	ns := h.namespace("cmns")
	sa := h.installRBAC(own, ns)
	user := "system:serviceaccount:" + own + ":bomstream-collector"
	for _, verb := range []string{"get", "list", "watch"} {
		if !h.allowed(user, own, verb, "configmaps", ns) {
			t.Errorf("the documented Role does not allow %s configmaps", verb)
		}
		if h.allowed(user, own, verb, "secrets", ns) {
			t.Errorf("the documented Role allows %s secrets", verb)
		}
	}
	h.configMapWorkloads(ns)
	cfg := h.config()
	cfg.NamespaceSelector = ""
	cfg.Namespaces = []string{ns}
	cfg.LeaderElection = kube.LeaderElectionConfig{Namespace: own, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}
	r := h.start(cfg, sa, nil)
	tgi := ns + "/Deployment/tgi"
	bustest.Eventually(t, "the four workloads", 15*time.Second, func() bool { return h.rec.count() == 4 })
	if e, _ := envFrom(h.rec.of(tgi)[0], "MODEL_ID"); e.Value != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("tgi MODEL_ID = %+v", e)
	}
	for k, err := range r.c.Health() {
		if err != nil {
			t.Errorf("%s degraded with the documented Role: %v", k, err)
		}
	}
	n := h.rec.count()
	h.configMap(ns, "tgi-config", map[string]string{"MODEL_ID": "mistralai/Mistral-7B-Instruct-v0.3"})
	bustest.Eventually(t, "tgi's new version", 10*time.Second, func() bool { return len(h.rec.of(tgi)) == 2 })
	if evs := h.quiet(n, ns, markDeployment); len(evs) != 1 || evs[0].Subject != tgi {
		t.Errorf("after the edit: %s, want one event of tgi", keys(evs))
	}
	noSecrets(t, h.rec.all())
	checkNoWrites(t, r)
}

// allowed asks the API server whether user (a ServiceAccount of own) may
// verb resource (core group) in ns.
func (h *harness) allowed(user, own, verb, resource, ns string) bool {
	h.t.Helper()
	kc, err := kubernetes.NewForConfig(h.env.Config)
	if err != nil {
		h.t.Fatal(err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + own, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns},
	}}
	got, err := kc.AuthorizationV1().SubjectAccessReviews().Create(h.ctx, sar, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return got.Status.Allowed
}
