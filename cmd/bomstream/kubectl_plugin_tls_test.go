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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/inventory/api/apitest"
)

// findingsRules open findings on some of testdata/inventory only: a vllm
// older than 0.8.5 or of no known version (old-vllm, latest-vllm), a
// model from an organisation not allowed (tgi, latest-vllm).
const findingsRules = `rules:
  - id: runtime-version
    check: runtime-version
    severity: high
    minimum:
      vllm: "0.8.5"
  - id: model-source
    check: model-source
    severity: high
    organisations: [meta-llama, Qwen]
`

// httpsQueries are the find queries asked three ways below, with the
// workloads each selects.
var httpsQueries = []struct {
	flags []string
	want  []string
}{
	{[]string{"--findings"}, []string{"old-vllm", "latest-vllm", "tgi"}},
	{[]string{"--findings", "--runtime", "vllm"}, []string{"old-vllm", "latest-vllm"}},
	{[]string{"--findings", "-n", "ml"}, []string{"old-vllm"}},
	{[]string{"--runtime", "vllm>=0.9"}, []string{"new-vllm"}},
}

// The API served over TLS, with a certificate of a CA the test makes,
// behind the chart's Service with api.tls (its port's appProtocol https):
// the plugin goes through the API server's service proxy with the https:
// scheme, and its find --findings, get and history answer as it does
// directly (--api-url https with --api-ca) and as bomstream does from the
// store. Without the CA, with another name or in plain HTTP the direct
// path is refused; the proxy speaking plain HTTP to the TLS port (the
// port without appProtocol https) is refused too.
func TestKubectlPluginOverHTTPS(t *testing.T) {
	ip := hostIP()
	if ip == "" && os.Getenv("CI") == "true" {
		t.Fatal("no non-loopback address to serve the API on: CI must run the service-proxy path end to end")
	}
	if ip == "" {
		t.Skip("no non-loopback address to serve the API on")
	}
	dir := t.TempDir()
	data, boms, m := filepath.Join(dir, "data"), filepath.Join(dir, "boms"), filepath.Join(dir, "m")
	copyManifests(t, "testdata/inventory", m)
	cfg := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, filepath.Join(dir, "rules.yaml"), findingsRules)
	writeFile(t, cfg, "findings:\n  rulesFile: "+filepath.Join(dir, "rules.yaml")+"\n")
	c := newCLI(t)
	c.mustRun("run", "--config", cfg, "--manifests", m, "--once", "--data-dir", data, "--sink-dir", boms)

	// bomstream's answers, from the store alone.
	var want []string
	for _, q := range httpsQueries {
		for _, o := range []string{"json", "table"} {
			want = append(want, c.mustRun(append([]string{"find", "--data-dir", data, "-o", o}, q.flags...)...).stdout)
		}
		if names, _ := entryNames(t, want[len(want)-2]); !slices.Equal(names, q.want) {
			t.Errorf("bomstream find %v = %v, want %v", q.flags, names, q.want)
		}
	}
	mustContain(t, "find --findings", want[0], `"rule": "runtime-version"`, `"rule": "model-source"`)
	wantGet := c.mustRun("get", "--data-dir", data, "ml/Deployment/old-vllm").stdout
	wantHistory := c.mustRun("history", "--data-dir", data, "team/Deployment/tgi").stdout

	pki := apitest.NewPKI(t, "bomstream test CA")
	cert, key, _ := pki.IssueServer(t, "", "", ip, "bomstream-api.bomstream.svc")
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "tls-s3cret\n")
	addr, stop := startServing(t, "run", "--config", cfg, "--manifests", m, "--data-dir", data, "--sink-dir", boms,
		"--api-listen", ip+":0", "--api-token-file", tokenFile, "--api-tls-cert", cert, "--api-tls-key", key)
	defer stop()
	direct := []string{"--api-url", "https://" + addr, "--api-ca", pki.CAFile, "--token-file", tokenFile}
	refusedDirectly(t, addr, tokenFile, direct)
	// The findings index is read once the API listens: until then
	// findings=true answers 503, and says so.
	pluginOnceReady(nil, "FINDINGS is still being read", append([]string{"find", "--findings"}, direct...)...)

	env, vars, viaTest := proxyToAPI(t, ip, addr)
	i := 0
	for _, q := range httpsQueries {
		for _, o := range []string{"json", "table"} {
			args := append([]string{"find", "-o", o}, q.flags...)
			viaProxy := mustPlugin(t, vars, append(args, viaTest...)...)
			directly := mustPlugin(t, nil, append(args, direct...)...)
			if viaProxy != want[i] || directly != want[i] {
				t.Errorf("find %v -o %s:\nthrough the proxy\n%s\ndirectly\n%s\nbomstream\n%s", q.flags, o, viaProxy, directly, want[i])
			}
			i++
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "-o", "json", "-n", "ml", "deploy/old-vllm"}, wantGet},
		{[]string{"history", "-n", "team", "deploy/tgi"}, wantHistory},
	} {
		viaProxy := mustPlugin(t, vars, append(c.args, viaTest...)...)
		directly := mustPlugin(t, nil, append(c.args, direct...)...)
		if viaProxy != c.want || directly != c.want {
			t.Errorf("%v:\nthrough the proxy\n%.400s\ndirectly\n%.400s\nbomstream\n%.400s", c.args, viaProxy, directly, c.want)
		}
	}
	mustContain(t, "get summary through the proxy", mustPlugin(t, vars, append([]string{"get", "deploy/old-vllm"}, viaTest...)...),
		"default/ml/Deployment/old-vllm", "vllm@0.8.4 (declared)")
	// --api-ca has nothing to check through the proxy: refused, saying why.
	r := plugin(vars, append([]string{"find", "--api-ca", pki.CAFile}, viaTest...)...)
	mustContain(t, "--api-ca through the proxy", fmt.Sprint(r.err), "--api-ca and --api-server-name go with --api-url", "does not check its certificate")

	// The https: scheme is what reaches the TLS port: without the port's
	// appProtocol the proxy speaks plain HTTP to it, and the answer says so.
	ctx := context.Background()
	svc, err := env.Client.CoreV1().Services("bomstream").Get(ctx, "bomstream-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports[0].AppProtocol = nil
	if _, err := env.Client.CoreV1().Services("bomstream").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = plugin(vars, append([]string{"find"}, viaTest...)...)
	mustContain(t, "plain HTTP through the proxy", fmt.Sprint(r.err), "400", "HTTP request to an HTTPS server", "service proxy (http:)")
	if out := strings.Join(stop(), ""); strings.Contains(out, "tls-s3cret") {
		t.Error("the token reached the output")
	}
}

// refusedDirectly: the API at addr serves TLS that only its CA vouches
// for, under its own names: without --api-ca, with another name, in plain
// HTTP, or with a CA file that holds no certificate, the plugin is
// refused, saying why.
func refusedDirectly(t *testing.T, addr, tokenFile string, direct []string) {
	t.Helper()
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	writeFile(t, notPEM, "not a certificate\n")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--api-url", "https://" + addr, "--token-file", tokenFile}, "certificate signed by unknown authority"},
		{append(append([]string{}, direct...), "--api-server-name", "other.example"), "not other.example"},
		{[]string{"--api-url", "http://" + addr, "--token-file", tokenFile}, "HTTP request to an HTTPS server"},
		{[]string{"--api-url", "http://" + addr, "--api-ca", notPEM}, "need an https --api-url"},
		{[]string{"--api-url", "https://" + addr, "--api-ca", notPEM}, "--api-ca " + notPEM + ": no PEM certificate"},
	} {
		r := plugin(nil, append([]string{"find"}, c.args...)...)
		mustContain(t, fmt.Sprint(c.args), fmt.Sprint(r.err), c.says)
	}
}

// proxyToAPI sets up the chart's Service with api.tls on a real API
// server, its token Secret, and endpoints at ip and the port of addr; it
// returns the server, the plugin's environment and the flags that
// choose the test's context (namespace ml).
func proxyToAPI(t *testing.T, ip, addr string) (*kubetest.Env, map[string]string, []string) {
	t.Helper()
	env := kubetest.Start(t)
	ctx := context.Background()
	for _, ns := range []string{"bomstream", "ml"} {
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svcs := chartObjects(t, "Service", "api.enabled=true", "api.token.secretName=bomstream-api", "cluster=default",
		"api.tls.enabled=true", "api.tls.secretName=bomstream-api-tls")
	var svc corev1.Service
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(svcs[0], &svc); err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.Ports[0].AppProtocol; p == nil || *p != "https" {
		t.Fatalf("the chart's Service with api.tls: port %+v", svc.Spec.Ports[0])
	}
	if _, err := env.Client.CoreV1().Services("bomstream").Create(ctx, &svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Secrets("bomstream").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bomstream-api"},
		Data: map[string][]byte{"token": []byte("tls-s3cret\n")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, portText, _ := net.SplitHostPort(addr)
	var port int32
	fmt.Sscan(portText, &port)
	setEndpoints(t, env, "bomstream", "bomstream-api", ip, port)
	vars, viaTest := map[string]string{"KUBECONFIG": twoContexts(t, env)}, []string{"--context", "test"}
	// The API server reads EndpointSlices through its cache: wait until
	// the proxy finds the endpoint.
	pluginOnceReady(vars, "no endpoints available", append([]string{"find"}, viaTest...)...)
	return env, vars, viaTest
}
