package kubeplugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/bomstream/bomstream/inventory/client"
)

// The chart's API Service: its labels, the annotations the plugin reads,
// and the name of its port.
const (
	ServiceSelector       = "app.kubernetes.io/part-of=bomstream,app.kubernetes.io/component=api"
	AnnotationCluster     = "bomstream.dev/cluster"
	AnnotationToken       = "bomstream.dev/api-token-secret"
	AnnotationTokenKey    = "bomstream.dev/api-token-key"
	ServicePortName       = "api"
	defaultRequestTimeout = 30 * time.Second
)

// Connection is how the plugin reaches the API: flags, and the process's
// environment for the kubeconfig's location.
type Connection struct {
	Kubeconfig, Context string
	APIURL, TokenFile   string
	// APICA is a PEM file of the CA the API's certificate is checked
	// against, and APIServerName the name it must hold (default: the
	// host of APIURL), for an https APIURL.
	APICA, APIServerName string
	// BomstreamNamespace and Service narrow the search for the API
	// Service: by default any namespace, by the chart's labels.
	BomstreamNamespace, Service string
	Timeout                     time.Duration
}

func (o *Connection) bind(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "the kubeconfig context to use (default: the current one)")
	f.StringVar(&o.APIURL, "api-url", "", "ask the bomstream API at this URL (http://127.0.0.1:8080 through a port-forward) instead of through the API server's service proxy")
	f.StringVar(&o.APICA, "api-ca", "", "PEM file of the CA that signed the API's certificate, for an https --api-url (default: the system's roots)")
	f.StringVar(&o.APIServerName, "api-server-name", "", "the name the API's certificate must hold, for an https --api-url (default: its host; through a port-forward, the Service's DNS name)")
	f.StringVar(&o.TokenFile, "token-file", "", "file holding the bomstream API's token (default through the proxy: the Secret the Service names, when readable)")
	f.StringVar(&o.BomstreamNamespace, "bomstream-namespace", "", "the namespace of bomstream's API Service (default: found by its labels in any namespace)")
	f.StringVar(&o.Service, "service", "", "the name of bomstream's API Service (default: found by its labels "+ServiceSelector+")")
	f.DurationVar(&o.Timeout, "request-timeout", defaultRequestTimeout, "give up on a request after this long")
}

// target is where the requests go, and the defaults the kubeconfig and
// the Service give.
type target struct {
	api *client.Client
	// namespace is the context's namespace (default: "default").
	namespace string
	// cluster is bomstream's name of this cluster (the Service's
	// annotation); "" when unknown.
	cluster string
}

// connect resolves the connection: --api-url directly, else the service
// proxy of the API Service found through the kubeconfig.
func (o *Connection) connect(ctx context.Context, getenv func(string) string) (*target, error) {
	cc := o.clientConfig(getenv)
	t := &target{namespace: "default"}
	if ns, _, err := cc.Namespace(); err == nil && ns != "" {
		t.namespace = ns
	} else if err != nil && o.APIURL == "" {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return nil, err
	}
	if o.APIURL != "" {
		hc, err := o.directClient()
		if err != nil {
			return nil, err
		}
		t.api = &client.Client{Base: o.APIURL, HTTP: hc, Token: token, Via: o.APIURL}
		return t, nil
	}
	if o.APICA != "" || o.APIServerName != "" {
		return nil, errors.New("--api-ca and --api-server-name go with --api-url: through the service proxy the API server " +
			"connects to the pod (https: for a Service port of appProtocol https) and does not check its certificate")
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w (or give --api-url)", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = o.Timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	svc, err := o.findService(ctx, cs)
	if err != nil {
		return nil, err
	}
	name := svc.Namespace + "/" + svc.Name
	port, scheme, err := apiPort(svc)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", name, err)
	}
	if token == "" {
		if token, err = secretToken(ctx, cs, svc); err != nil {
			return nil, err
		}
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	base := cs.CoreV1().RESTClient().Get().Namespace(svc.Namespace).Resource("services").
		Name(scheme + ":" + svc.Name + ":" + port).SubResource("proxy").URL()
	base.RawQuery = "" // the client's own parameters (timeout=) are not the API's
	t.api = &client.Client{Base: base.String(), HTTP: hc, Token: token,
		Via: fmt.Sprintf("service %s (port %s) through the API server's service proxy (%s:) at %s", name, port, scheme, cfg.Host)}
	t.cluster = svc.Annotations[AnnotationCluster]
	return t, nil
}

// directClient is the HTTP client of --api-url: with --api-ca it trusts
// that CA alone, with --api-server-name it checks that name.
func (o *Connection) directClient() (*http.Client, error) {
	hc := &http.Client{Timeout: o.Timeout}
	if o.APICA == "" && o.APIServerName == "" {
		return hc, nil
	}
	u, err := url.Parse(o.APIURL)
	if err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("--api-ca and --api-server-name need an https --api-url, not %q", o.APIURL)
	}
	tc := &tls.Config{ServerName: o.APIServerName, MinVersion: tls.VersionTLS12}
	if o.APICA != "" {
		b, err := os.ReadFile(o.APICA)
		if err != nil {
			return nil, fmt.Errorf("--api-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--api-ca %s: no PEM certificate", o.APICA)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	hc.Transport = tr
	return hc, nil
}

// clientConfig reads the kubeconfig as kubectl does: --kubeconfig, else
// the files of $KUBECONFIG, else ~/.kube/config; --context overrides the
// current context.
func (o *Connection) clientConfig(getenv func(string) string) clientcmd.ClientConfig {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
	if v := getenv(clientcmd.RecommendedConfigPathEnvVar); v != "" {
		rules.Precedence = filepath.SplitList(v)
	} else if home := getenv("HOME"); home != "" {
		rules.Precedence = []string{filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
}

// findService finds the one API Service: --service by name (in
// --bomstream-namespace or any), else by the chart's labels.
func (o *Connection) findService(ctx context.Context, cs kubernetes.Interface) (*corev1.Service, error) {
	where := "any namespace"
	if o.BomstreamNamespace != "" {
		where = "namespace " + o.BomstreamNamespace
	}
	opts := metav1.ListOptions{LabelSelector: ServiceSelector}
	what := "a bomstream API Service (labels " + ServiceSelector + ")"
	if o.Service != "" {
		opts = metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", o.Service).String()}
		what = "Service " + o.Service
	}
	list, err := cs.CoreV1().Services(o.BomstreamNamespace).List(ctx, opts)
	if err != nil {
		hint := ""
		if o.BomstreamNamespace == "" {
			hint = " (give --bomstream-namespace to look in one namespace only)"
		}
		return nil, fmt.Errorf("find %s in %s: %w%s", what, where, err, hint)
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("no %s in %s: install the chart with api.enabled=true, or give --api-url", what, where)
	case 1:
		return &list.Items[0], nil
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	return nil, fmt.Errorf("%s in %s: %d found (%s): choose one with --bomstream-namespace or --service", what, where, len(names), strings.Join(names, ", "))
}

// apiPort is the Service's API port (named "api", or its only one) and
// the scheme the proxy speaks to it.
func apiPort(svc *corev1.Service) (port, scheme string, err error) {
	var p *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == ServicePortName {
			p = &svc.Spec.Ports[i]
		}
	}
	if p == nil && len(svc.Spec.Ports) == 1 {
		p = &svc.Spec.Ports[0]
	}
	if p == nil {
		return "", "", fmt.Errorf("no port named %q", ServicePortName)
	}
	port = p.Name
	if port == "" {
		port = fmt.Sprint(p.Port)
	}
	scheme = "http"
	if p.Name == "https" || p.AppProtocol != nil && *p.AppProtocol == "https" {
		scheme = "https"
	}
	return port, scheme, nil
}

// secretToken reads the API token from the Secret the Service names; ""
// when it names none.
func secretToken(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service) (string, error) {
	name, key := svc.Annotations[AnnotationToken], svc.Annotations[AnnotationTokenKey]
	if name == "" {
		return "", nil
	}
	if key == "" {
		key = "token"
	}
	what := fmt.Sprintf("the API token: Secret %s/%s key %s (named by service %s)", svc.Namespace, name, key, svc.Name)
	s, err := cs.CoreV1().Secrets(svc.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("%s: %w (give --token-file)", what, err)
	}
	t := strings.TrimSpace(string(s.Data[key]))
	if t == "" {
		return "", fmt.Errorf("%s: no such key, or empty (give --token-file)", what)
	}
	return t, nil
}

// readToken reads --token-file; "" when none is given.
func readToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", errors.New("--token-file " + file + ": empty")
	}
	return t, nil
}
