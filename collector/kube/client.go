package kube

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig loads the client configuration: cfg.Kubeconfig, else
// $KUBECONFIG and ~/.kube/config (the usual loading rules), with cfg.Context;
// with none of those, the in-cluster service account.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	return rc, nil
}

// inClusterNamespace is the namespace of the pod, when in a cluster.
func inClusterNamespace(kubeconfig, context string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).Namespace()
	if err != nil {
		return ""
	}
	return ns
}

// requestMetrics counts the API requests of the collector by verb and
// resource; writes are counted apart so that "the collector never writes,
// the Lease aside" is a number.
type requestMetrics struct {
	requests *prometheus.CounterVec
}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bomstream_kube_requests_total",
		Help: "Kubernetes API requests of the collector, by verb (get, list, watch, create, update, patch, delete, discovery) and resource.",
	}, []string{"verb", "resource"})}
}

// wrap returns cfg with a transport that counts every request.
func (m *requestMetrics) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			verb, resource := classify(r)
			m.requests.WithLabelValues(verb, resource).Inc()
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// classify turns a request into the Kubernetes verb and resource:
// /api/v1/namespaces/ml/pods?watch=true is (watch, pods).
func classify(r *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return "discovery", ""
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return "discovery", ""
	}
	resource = rest[0]
	named := len(rest) >= 2
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(r.Method)
	}
	return verb, resource
}

// IsWrite reports whether a verb changes the cluster.
func IsWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}
