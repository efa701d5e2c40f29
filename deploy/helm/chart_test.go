// Package helm_test checks the Helm chart in bomstream/ (deploy/helm/bomstream):
// it renders through the Helm SDK exactly as `helm install --dry-run=client`
// and `helm template` do (schema validation included), holds the rendered
// objects to the promises of docs/install.md (read-only RBAC, no Secrets, no
// webhooks, nothing cluster-scoped in the namespaced mode, hardened pods),
// keeps deploy/manifests, deploy/rbac and the footprint table in docs in step
// with the chart (go test -update rewrites them), applies every rendered
// object to a real API server with server-side apply, and runs the real
// collector as the chart's ServiceAccount.
package helm_test

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// chartDir is the chart, relative to this package.
const chartDir = "bomstream"

// The release the plain manifests are rendered as.
const (
	releaseName      = "bomstream"
	releaseNamespace = "bomstream"
)

// variant is one of the four shapes the chart documents: a shape and an
// RBAC mode, with the --set assignments that select it from the defaults.
type variant struct {
	shape, mode string
	sets        []string
}

func (v variant) String() string { return v.shape + "-" + v.mode }

// exampleNamespaces are the namespaces the namespaced variants read in the
// plain manifests and the footprint table.
var exampleNamespaces = []string{"ml", "serving"}

var variants = []variant{
	{"all-in-one", "cluster", nil},
	{"all-in-one", "namespaced", []string{"watch.mode=namespaced", "watch.namespaces={" + strings.Join(exampleNamespaces, ",") + "}"}},
	{"distributed", "cluster", []string{"shape=distributed"}},
	{"distributed", "namespaced", []string{"shape=distributed", "watch.mode=namespaced", "watch.namespaces={" + strings.Join(exampleNamespaces, ",") + "}"}},
}

// rendering is the chart rendered with some values.
type rendering struct {
	manifest string // as `helm template` prints it
	notes    string
	objects  []*unstructured.Unstructured
}

// loadChart reads the chart through Helm's loader, which applies .helmignore.
func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

// values parses --set assignments with Helm's own parser.
func values(t testing.TB, sets ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	return vals
}

// render installs the chart client-only, as `helm install --dry-run=client`
// and `helm template` do: values merged with values.yaml and checked
// against values.schema.json, templates rendered, manifests in install order.
func render(ch *chart.Chart, name, namespace string, vals map[string]any) (rendering, error) {
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun = true
	in.ClientOnly = true
	in.Replace = true
	in.ReleaseName = name
	in.Namespace = namespace
	rel, err := in.Run(ch, vals)
	if err != nil {
		return rendering{}, err
	}
	objs, err := decode(rel.Manifest)
	if err != nil {
		return rendering{}, err
	}
	return rendering{manifest: rel.Manifest, notes: rel.Info.Notes, objects: objs}, nil
}

func mustRender(t testing.TB, name, namespace string, vals map[string]any) rendering {
	t.Helper()
	r, err := render(loadChart(t), name, namespace, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// renderVariant renders a variant as the plain manifests are rendered, with
// more assignments.
func renderVariant(t testing.TB, v variant, more ...string) rendering {
	t.Helper()
	return mustRender(t, releaseName, releaseNamespace, values(t, append(append([]string(nil), v.sets...), more...)...))
}

// decode splits a multi-document manifest into objects.
func decode(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// of returns the objects of one kind.
func (r rendering) of(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the object of kind and name, failing when there is none.
func (r rendering) one(t testing.TB, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.of(kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// clusterScoped says which kinds have no namespace. Every kind the chart
// renders must be listed (the test fails on one that is not), and the API
// server test checks the list against the server's discovery.
var clusterScoped = map[string]bool{
	"ClusterRole":                    true,
	"Certificate":                    false,
	"ClusterRoleBinding":             true,
	"ConfigMap":                      false,
	"Deployment":                     false,
	"NetworkPolicy":                  false,
	"PersistentVolumeClaim":          false,
	"Role":                           false,
	"RoleBinding":                    false,
	"Service":                        false,
	"ServiceAccount":                 false,
	"ServiceMonitor":                 false,
	"MutatingWebhookConfiguration":   true,
	"ValidatingWebhookConfiguration": true,
	"CustomResourceDefinition":       true,
	"Namespace":                      true,
}

// isClusterScoped reports the scope of an object's kind.
func isClusterScoped(t testing.TB, o *unstructured.Unstructured) bool {
	t.Helper()
	cs, ok := clusterScoped[o.GetKind()]
	if !ok {
		t.Fatalf("the chart renders a %s: say in clusterScoped whether it is cluster-scoped", o.GetKind())
	}
	return cs
}

// ref names an object as kind namespace/name (or kind name).
func ref(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
