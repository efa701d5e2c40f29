package kubetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"
)

// CRD describes a custom resource for MinimalCRDs: group, kind, plural,
// scope and served versions (the first is the storage version).
type CRD struct {
	Group, Kind, Plural string
	ClusterScoped       bool
	Versions            []string
}

// MinimalCRDs installs structural CRDs that keep every field of their
// objects (x-kubernetes-preserve-unknown-fields at the root, so kinds with
// no spec, like a KAITO Workspace, keep theirs too), and waits until they
// are established. It returns their names.
func (e *Env) MinimalCRDs(ctx context.Context, crds ...CRD) ([]string, error) {
	var names []string
	for _, c := range crds {
		name := c.Plural + "." + c.Group
		scope := apiextensionsv1.NamespaceScoped
		if c.ClusterScoped {
			scope = apiextensionsv1.ClusterScoped
		}
		keep := true
		crd := &apiextensionsv1.CustomResourceDefinition{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: c.Group, Scope: scope,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: c.Kind, ListKind: c.Kind + "List", Plural: c.Plural, Singular: strings.ToLower(c.Kind)},
			},
		}
		for i, v := range c.Versions {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
				Name: v, Served: true, Storage: i == 0,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &keep,
				}},
			})
		}
		js, err := sigsyaml.Marshal(crd)
		if err != nil {
			return names, err
		}
		js, err = sigsyaml.YAMLToJSON(js)
		if err != nil {
			return names, err
		}
		force := true
		if _, err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.ApplyPatchType, js,
			metav1.PatchOptions{FieldManager: "bomstream-test", Force: &force}); err != nil {
			return names, fmt.Errorf("apply %s: %w", name, err)
		}
		names = append(names, name)
	}
	for _, n := range names {
		if err := e.waitEstablished(ctx, n); err != nil {
			return names, err
		}
	}
	return names, nil
}

// CreateManifests creates the objects of the YAML files in the API server,
// each in namespace when it names none and its kind is namespaced (the
// namespace must exist). Owner references are rewritten to the uids of the
// owners created before them (an owner is found by kind, name and
// namespace), as an operator would set them; an owner that is not there
// keeps the uid as written. Documents of kinds the server does not serve
// are an error. It returns the objects created, in file order.
func (e *Env) CreateManifests(ctx context.Context, namespace string, files ...string) ([]*unstructured.Unstructured, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	var docs []map[string]any
	for _, f := range files {
		raw, err := crdDocs(f)
		if err != nil {
			return nil, err
		}
		for _, d := range raw {
			var obj map[string]any
			if err := sigsyaml.Unmarshal(d, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if obj != nil {
				docs = append(docs, obj)
			}
		}
	}
	// Owners first: objects without owner references, then the others.
	sort.SliceStable(docs, func(i, j int) bool {
		return !hasOwners(docs[i]) && hasOwners(docs[j])
	})
	uids := map[string]types.UID{} // kind/namespace/name -> uid
	var out []*unstructured.Unstructured
	for _, obj := range docs {
		u := &unstructured.Unstructured{Object: obj}
		gvk := u.GroupVersionKind()
		m, err := restMapping(ctx, mapper, gvk)
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", gvk, u.GetName(), err)
		}
		ri := e.Dynamic.Resource(m.Resource)
		var created *unstructured.Unstructured
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if u.GetNamespace() == "" {
				u.SetNamespace(namespace)
			}
			refs := u.GetOwnerReferences()
			for i := range refs {
				if uid, ok := uids[refs[i].Kind+"/"+u.GetNamespace()+"/"+refs[i].Name]; ok {
					refs[i].UID = uid
				}
			}
			u.SetOwnerReferences(refs)
			created, err = createRetry(ctx, func() (*unstructured.Unstructured, error) {
				return ri.Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
			})
		} else {
			created, err = createRetry(ctx, func() (*unstructured.Unstructured, error) { return ri.Create(ctx, u, metav1.CreateOptions{}) })
		}
		if err != nil {
			return out, fmt.Errorf("create %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
		uids[created.GetKind()+"/"+created.GetNamespace()+"/"+created.GetName()] = created.GetUID()
		out = append(out, created)
	}
	return out, nil
}

func hasOwners(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	refs, _ := md["ownerReferences"].([]any)
	return len(refs) > 0
}

// createRetry retries a create while the API server has not yet got the
// default service account of a new namespace (pods need it).
func createRetry(ctx context.Context, create func() (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		u, err := create()
		if err == nil || time.Now().After(deadline) || !(apierrors.IsForbidden(err) || apierrors.IsServerTimeout(err)) {
			return u, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restMapping is the mapping of gvk, asked again with a fresh discovery
// while the kind is not served yet: a CRD reports Established a moment
// before discovery lists its kind, longer on a busy machine.
func restMapping(ctx context.Context, mapper *restmapper.DeferredDiscoveryRESTMapper, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	for {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil || !meta.IsNoMatchError(err) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
			mapper.Reset()
		}
	}
}
