package kube

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

// object is what the collector keeps of one cluster object in place of the
// object itself: identity, controller reference, and either the workload's
// normalized inputs or, for a pod, the images and digests it reports. A
// transform function builds it as the object arrives from the API server,
// so the informer caches grow with what BOMs need (a few hundred bytes per
// pod or ReplicaSet), not with the objects: no managedFields, no status, no
// annotations, no spec beyond the inputs. It is never changed once built;
// DeepCopyObject returns the same pointer.
type object struct {
	metav1.TypeMeta
	objectMeta

	owner *collector.OwnerRef
	// inputs of an object that is a workload of its own; nil otherwise.
	// When it reads ConfigMaps, they are its draft's, not yet complete.
	inputs *schemas.Inputs
	// draft is set when the object reads ConfigMaps: it is completed with
	// the session's Lookup each time it is decided.
	draft *collector.Draft
	// configMaps are the ConfigMaps of its namespace it reads (a linked
	// object: the ConfigMaps it names anywhere, which the workloads that
	// read it may take).
	configMaps []string
	// rolledUp: a known owner kind controls the object (ErrNotWorkload).
	rolledUp bool
	// skip says why an object of a workload kind has no inputs (a malformed
	// object); it is logged, never tombstoned.
	skip error
	// metaOnly: only metadata was watched (ReplicaSets, Grove objects); a
	// top-level one needs a GET to be normalized.
	metaOnly bool
	// images are a pod's containers with the imageIDs they report.
	images []collector.PodImage
	// raw is the whole object (without status and managedFields) of a kind
	// other workloads read (linked: a KServe runtime, a Seldon Model) or
	// that reads others (linking: an InferenceService, a Seldon Server),
	// normalized again with the session's Lookup when it is decided.
	raw map[string]any
	// linked and linking are the kind's (collector.Kind).
	linked, linking bool
}

func (o *object) DeepCopyObject() runtime.Object { return o }

// objectMeta is the metadata the collector reads: what an informer needs to key
// and version the object, and its identity. It is a fraction of
// metav1.ObjectMeta, which with its maps, slices and timestamps weighs
// about 250 bytes even when empty, once per pod and ReplicaSet.
type objectMeta struct {
	Name, Namespace string
	UID             types.UID
	ResourceVersion string
	Generation      int64
}

// GetObjectMeta makes the object a metav1.ObjectMetaAccessor, which is how
// the informer's store (meta.Accessor) reads its key and version.
func (m *objectMeta) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation}
}

func (o *object) ref() collector.Object {
	return collector.Object{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID), Owner: o.owner}
}

// slimMeta keeps the metadata the collector reads.
func slimMeta(m metav1.Object) (objectMeta, *collector.OwnerRef) {
	out := objectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
	}
	var owner *collector.OwnerRef
	for _, r := range m.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			owner = &collector.OwnerRef{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: string(r.UID)}
			break
		}
	}
	return out, owner
}

// transformer builds objects of one watched kind.
type transformer struct {
	norm       *collector.Normalizer
	apiVersion string
	kind       collector.Kind
}

// transform is the informer's TransformFunc. It never fails: an object that
// cannot be read is kept with its error, so that one bad object never breaks
// the watch of its kind.
func (t transformer) transform(in any) (any, error) {
	switch o := in.(type) {
	case *object:
		return o, nil
	case cache.DeletedFinalStateUnknown:
		return o, nil
	case *metav1.PartialObjectMetadata:
		meta, owner := slimMeta(o)
		return &object{TypeMeta: t.typeMeta(), objectMeta: meta, owner: owner, metaOnly: true, rolledUp: !t.kind.Workload || t.ownedByKnown(owner)}, nil
	case *unstructured.Unstructured:
		out := t.fromMap(o, o.Object)
		if t.kind.Linked || t.kind.Linking {
			out.raw, out.linked, out.linking = slimRaw(o.Object), t.kind.Linked, t.kind.Linking
		}
		if t.kind.Linked && out.Namespace != "" {
			out.configMaps = collector.ConfigMapsIn(out.raw)
		}
		return out, nil
	case *corev1.Pod:
		return t.pod(o), nil
	case metav1.Object:
		ro, ok := in.(runtime.Object)
		if !ok {
			return in, nil
		}
		meta, owner := slimMeta(o)
		if t.ownedByKnown(owner) {
			return &object{TypeMeta: t.typeMeta(), objectMeta: meta, owner: owner, rolledUp: true}, nil
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
		if err != nil {
			return &object{TypeMeta: t.typeMeta(), objectMeta: meta, owner: owner, skip: fmt.Errorf("convert: %w", err)}, nil
		}
		return t.fromMap(o, m), nil
	}
	return in, nil
}

func (t transformer) typeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: t.apiVersion, Kind: t.kind.Kind}
}

func (t transformer) ownedByKnown(owner *collector.OwnerRef) bool {
	if owner == nil {
		return false
	}
	group, _, _ := cutAPIVersion(owner.APIVersion)
	k, ok := t.norm.KindOf(group, owner.Kind)
	return ok && k.Owner
}

// fromMap normalizes a whole object.
func (t transformer) fromMap(m metav1.Object, obj map[string]any) *object {
	meta, owner := slimMeta(m)
	o := &object{TypeMeta: t.typeMeta(), objectMeta: meta, owner: owner}
	if av, _ := obj["apiVersion"].(string); av != "" {
		o.APIVersion = av
	} else {
		obj["apiVersion"], obj["kind"] = t.apiVersion, t.kind.Kind
	}
	if !t.kind.Workload {
		o.rolledUp = true
		return o
	}
	d, err := t.norm.Draft(obj, "cluster")
	switch {
	case errors.Is(err, collector.ErrNotWorkload):
		o.rolledUp = true
	case err != nil:
		o.skip = err
	default:
		o.inputs = d.Inputs()
		if names := d.ConfigMaps(); names != nil {
			o.draft, o.configMaps = d, names
		}
	}
	return o
}

// pod keeps the images and digests of a pod and, for a pod no known kind
// controls (a workload of its own), its inputs.
func (t transformer) pod(p *corev1.Pod) *object {
	meta, owner := slimMeta(p)
	o := &object{TypeMeta: t.typeMeta(), objectMeta: meta, owner: owner}
	specImage := map[string]string{}
	for _, c := range p.Spec.InitContainers {
		specImage[c.Name] = c.Image
	}
	for _, c := range p.Spec.Containers {
		specImage[c.Name] = c.Image
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, s := range list {
			if s.ImageID == "" {
				continue
			}
			img := specImage[s.Name]
			if img == "" {
				img = s.Image
			}
			o.images = append(o.images, collector.PodImage{Container: s.Name, Image: img, ImageID: s.ImageID})
		}
	}
	if t.ownedByKnown(owner) {
		o.rolledUp = true
		return o
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		o.skip = fmt.Errorf("convert: %w", err)
		return o
	}
	full := t.fromMap(p, m)
	o.inputs, o.rolledUp, o.skip = full.inputs, full.rolledUp, full.skip
	o.draft, o.configMaps = full.draft, full.configMaps
	return o
}

// slimRaw is obj without what no profile reads (status, managedFields),
// for the objects the collector keeps whole.
func slimRaw(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if k != "managedFields" {
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	return out
}

func cutAPIVersion(av string) (group, version string, ok bool) {
	for i := 0; i < len(av); i++ {
		if av[i] == '/' {
			return av[:i], av[i+1:], true
		}
	}
	return "", av, false
}
