package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/kubeplugin"
)

// plugin runs `kubectl bomstream args...` with the environment vars.
func plugin(vars map[string]string, args ...string) result {
	var out, errb syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitFor)
	defer cancel()
	err := kubeplugin.Run(ctx, args, kubeplugin.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }})
	return result{stdout: out.String(), stderr: errb.String(), err: err}
}

// pluginOnceReady runs the plugin until its error no longer says notYet
// (a state the API server or the API leaves by itself), for at most
// waitFor, and returns the last result.
func pluginOnceReady(vars map[string]string, notYet string, args ...string) result {
	deadline := time.Now().Add(waitFor)
	for {
		r := plugin(vars, args...)
		if r.err == nil || !strings.Contains(r.err.Error(), notYet) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustPlugin(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	r := plugin(vars, args...)
	if r.err != nil {
		t.Fatalf("kubectl bomstream %s: %v\n%s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r.stdout
}

// The plugin, asking a running `run`'s API with --api-url and its token,
// answers find, get and history as bomstream does from the store.
func TestKubectlPluginAnswersAsBomstream(t *testing.T) {
	dir := t.TempDir()
	data, boms, m := filepath.Join(dir, "data"), filepath.Join(dir, "boms"), filepath.Join(dir, "m")
	copyManifests(t, "testdata/inventory", m)
	c := newCLI(t)
	c.mustRun("run", "--manifests", m, "--once", "--data-dir", data, "--sink-dir", boms)
	type answer struct{ find, get, history []string }
	// bomstream's answers, from the store alone.
	var want answer
	for _, tc := range findCases {
		for _, o := range []string{"json", "table", "csv"} {
			want.find = append(want.find, c.mustRun(append([]string{"find", "--data-dir", data, "-o", o}, tc.flags...)...).stdout)
		}
	}
	for _, key := range []string{"ml/Deployment/old-vllm", "team/Deployment/tgi"} {
		want.get = append(want.get, c.mustRun("get", "--data-dir", data, key).stdout)
		want.history = append(want.history, c.mustRun("history", "--data-dir", data, key).stdout)
	}

	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "plugin-s3cret\n")
	addr, stop := startServing(t, "run", "--manifests", m, "--data-dir", data, "--sink-dir", boms,
		"--api-listen", "127.0.0.1:0", "--api-token-file", tokenFile)
	defer stop()
	conn := []string{"--api-url", "http://" + addr, "--token-file", tokenFile}
	var got answer
	for _, tc := range findCases {
		for _, o := range []string{"json", "table", "csv"} {
			got.find = append(got.find, mustPlugin(t, nil, append(append([]string{"find", "-o", o}, conn...), tc.flags...)...))
		}
	}
	for _, ref := range [][]string{{"-n", "ml", "deploy/old-vllm"}, {"-n", "team", "deployment/tgi"}} {
		got.get = append(got.get, mustPlugin(t, nil, append(append([]string{"get", "-o", "json"}, conn...), ref...)...))
		got.history = append(got.history, mustPlugin(t, nil, append(append([]string{"history"}, conn...), ref...)...))
	}
	for i := range want.find {
		if got.find[i] != want.find[i] {
			t.Errorf("find %v -o %s: plugin\n%s\nbomstream\n%s", findCases[i/3].flags, []string{"json", "table", "csv"}[i%3], got.find[i], want.find[i])
		}
	}
	for i := range want.get {
		if got.get[i] != want.get[i] {
			t.Errorf("get -o json %d: plugin\n%.400s\nbomstream\n%.400s", i, got.get[i], want.get[i])
		}
		if got.history[i] != want.history[i] {
			t.Errorf("history %d: plugin\n%s\nbomstream\n%s", i, got.history[i], want.history[i])
		}
	}
	sum := mustPlugin(t, nil, append([]string{"get", "-n", "ml", "Deployment/old-vllm"}, conn...)...)
	mustContain(t, "summary", sum, "default/ml/Deployment/old-vllm", "State:", "serving", "vllm@0.8.4 (declared)", "meta-llama/Llama-3.1-70B-Instruct", "Image:")

	// Wrong names and bad queries are refused with the part at fault.
	r := plugin(nil, append([]string{"get", "-n", "ml", "sts/old-vllm"}, conn...)...)
	if r.err == nil || !strings.Contains(r.err.Error(), "workload ml/StatefulSet/old-vllm not found") {
		t.Errorf("get of a missing workload: %v", r.err)
	}
	r = plugin(nil, append([]string{"find", "--runtime", "vllm<<1"}, conn...)...)
	if r.err == nil || !strings.Contains(r.err.Error(), `runtime "vllm<<1"`) {
		t.Errorf("bad range: %v", r.err)
	}
	// Without the token the API refuses, and says what is missing.
	r = plugin(nil, "find", "--api-url", "http://"+addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "401") || !strings.Contains(r.err.Error(), "--token-file") {
		t.Errorf("find without the token: %v", r.err)
	}
	if strings.Contains(strings.Join(stop(), ""), "plugin-s3cret") {
		t.Error("the token reached the output")
	}
}

// chartObjects renders the chart (deploy/helm/bomstream) client-only, as
// `helm template` does, and returns the objects of kind.
func chartObjects(t *testing.T, kind string, sets ...string) []map[string]any {
	t.Helper()
	ch, err := loader.Load("../../deploy/helm/bomstream")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatal(err)
		}
	}
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun, in.ClientOnly, in.Replace, in.ReleaseName, in.Namespace = true, true, true, "bomstream", "bomstream"
	rel, err := in.Run(ch, vals)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	var out []map[string]any
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			break
		}
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

// hostIP is an address of this machine the API server may proxy to (not
// loopback, not link-local); "" when there is none.
func hostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// twoContexts writes a kubeconfig whose current context ("elsewhere")
// names an API server that is not there, and whose context "test" names
// the test's, with namespace ml.
func twoContexts(t *testing.T, env *kubetest.Env) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	test := cur.DeepCopy()
	test.Namespace = "ml"
	cfg.Contexts = map[string]*clientcmdapi.Context{"test": test, "elsewhere": {Cluster: "elsewhere", AuthInfo: cur.AuthInfo}}
	cfg.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.CurrentContext = "elsewhere"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The plugin finds the chart's API Service through the kubeconfig on a
// real API server and asks through its service proxy. Without nodes the
// proxy has no pod to reach: first it answers 503 (no endpoints), which
// the plugin reports naming the Service; then the Service's endpoints are
// set by hand to this machine's address, where `run` serves the API
// beyond loopback with a token, and the plugin's answers come back
// through the proxy, equal to those of --api-url.
func TestKubectlPluginThroughKubeconfig(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	kcfg := twoContexts(t, env)
	for _, ns := range []string{"bomstream", "ml"} {
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"KUBECONFIG": kcfg}
	viaTest := []string{"--context", "test"}

	// No Service yet: the plugin says what it looked for.
	r := plugin(vars, append([]string{"find"}, viaTest...)...)
	mustContain(t, "no service", fmt.Sprint(r.err), "no a bomstream API Service", kubeplugin.ServiceSelector, "any namespace", "api.enabled=true")
	// The current context's server is not there: --context is what reached the test's.
	r = plugin(vars, "find")
	mustContain(t, "current context", fmt.Sprint(r.err), "127.0.0.1:1")

	svcs := chartObjects(t, "Service", "api.enabled=true", "api.token.secretName=bomstream-api", "cluster=default")
	if len(svcs) != 1 {
		t.Fatalf("the chart renders %d Services with api.enabled", len(svcs))
	}
	var svc corev1.Service
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(svcs[0], &svc); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Services("bomstream").Create(ctx, &svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The token's Secret is not there yet.
	r = plugin(vars, append([]string{"find"}, viaTest...)...)
	mustContain(t, "no secret", fmt.Sprint(r.err), "Secret bomstream/bomstream-api key token", "service bomstream-api", "--token-file")
	if _, err := env.Client.CoreV1().Secrets("bomstream").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bomstream-api"},
		Data: map[string][]byte{"token": []byte("proxy-s3cret\n")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Found, asked through the proxy: no endpoints behind the Service.
	r = plugin(vars, append([]string{"find"}, viaTest...)...)
	mustContain(t, "no endpoints", fmt.Sprint(r.err), "/api/v1/workloads", "service bomstream/bomstream-api (port api)", "service proxy", "503", `no endpoints available for service "bomstream-api"`)
	if strings.Contains(fmt.Sprint(r.err), "proxy-s3cret") {
		t.Error("the token is in an error")
	}

	ip := hostIP()
	if ip == "" && os.Getenv("CI") == "true" {
		t.Fatal("no non-loopback address to serve the API on: CI must run the service-proxy path end to end")
	}
	if ip == "" {
		t.Skip("no non-loopback address to serve the API on: the proxy was exercised up to the missing endpoints")
	}
	dir := t.TempDir()
	data, boms, m := filepath.Join(dir, "data"), filepath.Join(dir, "boms"), filepath.Join(dir, "m")
	copyManifests(t, "testdata/inventory", m)
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "proxy-s3cret\n")
	newCLI(t).mustRun("run", "--manifests", m, "--once", "--data-dir", data, "--sink-dir", boms)
	addr, stop := startServing(t, "run", "--manifests", m, "--data-dir", data, "--sink-dir", boms,
		"--api-listen", ip+":0", "--api-token-file", tokenFile)
	defer stop()
	_, portText, _ := net.SplitHostPort(addr)
	var port int32
	fmt.Sscan(portText, &port)
	setEndpoints(t, env, "bomstream", "bomstream-api", ip, port)
	// The API server reads EndpointSlices through its cache: wait until
	// the proxy finds the endpoint.
	r = pluginOnceReady(vars, "no endpoints available", append([]string{"find"}, viaTest...)...)

	direct := []string{"--api-url", "http://" + addr, "--token-file", tokenFile}
	for _, tc := range findCases {
		args := append([]string{"find", "-o", "json"}, tc.flags...)
		viaProxy := mustPlugin(t, vars, append(args, viaTest...)...)
		if want := mustPlugin(t, nil, append(args, direct...)...); viaProxy != want {
			t.Errorf("find %v through the proxy:\n%s\ndirectly:\n%s", tc.flags, viaProxy, want)
		}
		if names, _ := entryNames(t, viaProxy); !slices.Equal(names, tc.want) {
			t.Errorf("find %v through the proxy = %v, want %v", tc.flags, names, tc.want)
		}
	}
	// -n defaults to the context's namespace (ml); -n names another.
	mustContain(t, "get in the context's namespace", mustPlugin(t, vars, append([]string{"get", "deploy/old-vllm"}, viaTest...)...), "default/ml/Deployment/old-vllm")
	mustContain(t, "history -n team", mustPlugin(t, vars, append([]string{"history", "-n", "team", "deploy/tgi"}, viaTest...)...), "default/team/Deployment/tgi")
	r = plugin(vars, append([]string{"get", "deploy/tgi"}, viaTest...)...)
	mustContain(t, "tgi is not in ml", fmt.Sprint(r.err), "workload ml/Deployment/tgi not found in cluster default")
	// --kubeconfig wins over $KUBECONFIG.
	mustPlugin(t, map[string]string{"KUBECONFIG": filepath.Join(dir, "none")}, append([]string{"find", "--kubeconfig", kcfg}, viaTest...)...)

	// A wrong token is refused beyond loopback, through the proxy too.
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "wrong\n")
	r = plugin(vars, append([]string{"find", "--token-file", bad}, viaTest...)...)
	mustContain(t, "wrong token", fmt.Sprint(r.err), "401", "a bearer token is required", "service bomstream/bomstream-api")
	if out := strings.Join(stop(), ""); strings.Contains(out, "proxy-s3cret") {
		t.Error("the token reached the output")
	}
}

// setEndpoints points a Service at ip:port by hand, as the controllers
// would for a ready pod: a Pod (never scheduled) whose status says it has
// ip, and an EndpointSlice naming it. The API server's proxy goes only to
// an address a pod of the namespace has.
func setEndpoints(t *testing.T, env *kubetest.Env, ns, name, ip string, port int32) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "bomstream", Image: "ghcr.io/bomstream/bomstream"}}}}
	pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if _, err := env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	portName, proto, ready := "api", corev1.ProtocolTCP, true
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-manual", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}}},
		Ports: []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}}}
	if _, err := env.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
