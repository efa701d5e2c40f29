package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"

	"github.com/bomstream/bomstream/collector"
)

// resource is a profile kind resolved against discovery: the one resource
// and version it is watched at.
type resource struct {
	kind       collector.Kind
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (r resource) label() string { return r.kind.String() }

// thirdParty reports whether the kind comes from a CRD (or an aggregated
// API): those are probed, and come and go.
func (r resource) thirdParty() bool {
	switch r.gvr.Group {
	case "", "apps", "batch":
		return false
	}
	return true
}

// builtinTyped are the built-in resources watched with typed clients
// (protobuf on the wire); every other resource is watched with the dynamic
// or the metadata client.
var builtinTyped = map[schema.GroupVersionResource]func() runtime.Object{
	{Version: "v1", Resource: "pods"}:                        func() runtime.Object { return &corev1.Pod{} },
	{Version: "v1", Resource: "replicationcontrollers"}:      func() runtime.Object { return &corev1.ReplicationController{} },
	{Group: "apps", Version: "v1", Resource: "deployments"}:  func() runtime.Object { return &appsv1.Deployment{} },
	{Group: "apps", Version: "v1", Resource: "statefulsets"}: func() runtime.Object { return &appsv1.StatefulSet{} },
	{Group: "apps", Version: "v1", Resource: "daemonsets"}:   func() runtime.Object { return &appsv1.DaemonSet{} },
	{Group: "batch", Version: "v1", Resource: "jobs"}:        func() runtime.Object { return &batchv1.Job{} },
	{Group: "batch", Version: "v1", Resource: "cronjobs"}:    func() runtime.Object { return &batchv1.CronJob{} },
	configMapsGVR: func() runtime.Object { return &corev1.ConfigMap{} },
}

// metadataOnly are resources whose objects matter only for their owner
// references: a ReplicaSet is nearly always its Deployment's, and Grove or
// Knative objects are their graph's or service's. A top-level one is read
// in full with a GET when it needs normalizing.
func metadataOnly(r resource) bool {
	switch {
	case r.gvr == configMapsGVR:
		return false // their transform keeps what is read (configmaps.go)
	case r.gvr.Group == "apps" && r.gvr.Resource == "replicasets":
		return true
	}
	return !r.kind.Workload && !r.kind.Linked
}

// resolve finds, for each profile kind, the resource that serves it: in its
// group's preferred version when the profile reads that version, else in the
// first served version the profile reads. A kind that no served version
// offers is absent. Partial discovery failures (an aggregated API down) are
// returned along with what was found.
func resolve(disco discovery.DiscoveryInterface, kinds []collector.Kind) (map[string]resource, error) {
	groups, lists, err := disco.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	served := map[schema.GroupVersion]map[string]metav1.APIResource{} // kind -> resource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		m := map[string]metav1.APIResource{}
		for _, r := range l.APIResources {
			if r.Kind == "" || containsSlash(r.Name) || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			m[r.Kind] = r
		}
		served[gv] = m
	}
	out := map[string]resource{}
	for _, k := range kinds {
		var versions []string
		for _, g := range groups {
			if g.Name != k.Group {
				continue
			}
			versions = append(versions, g.PreferredVersion.Version)
			for _, v := range g.Versions {
				if v.Version != g.PreferredVersion.Version {
					versions = append(versions, v.Version)
				}
			}
		}
		for _, v := range versions {
			if !k.ReadsVersion(v) {
				continue
			}
			r, ok := served[schema.GroupVersion{Group: k.Group, Version: v}][k.Kind]
			if !ok {
				continue
			}
			out[k.String()] = resource{kind: k, gvr: schema.GroupVersionResource{Group: k.Group, Version: v, Resource: r.Name}, namespaced: r.Namespaced}
			break
		}
	}
	if err != nil {
		return out, fmt.Errorf("discovery (partial): %w", err)
	}
	return out, nil
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// kindWatch is the running watch of one resource: one informer, or one per
// namespace in the namespace-restricted mode.
type kindWatch struct {
	res       resource
	informers []cache.SharedIndexInformer
	// handlers are the event handler registrations: synced once the
	// handlers have seen every object of the first list, not only the cache.
	handlers []cache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
	done     chan struct{}
}

// synced reports whether every informer has listed once and its handlers
// have seen what it listed.
func (w *kindWatch) synced() bool {
	for _, inf := range w.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	for _, h := range w.handlers {
		if !h.HasSynced() {
			return false
		}
	}
	return true
}

// anyObject returns the name and namespace of one cached object.
func (w *kindWatch) anyObject() (namespace, name string, ok bool) {
	for _, inf := range w.informers {
		for _, key := range inf.GetStore().ListKeys() {
			ns, n, err := cache.SplitMetaNamespaceKey(key)
			if err == nil {
				return ns, n, true
			}
		}
	}
	return "", "", false
}

// listWatch builds the ListerWatcher of one resource in one namespace (""
// for all). Every list and watch is reported to the health book, and every
// watch asks the server for a long timeout, so an idle collector makes few
// requests.
func (s *session) listWatch(r resource, namespace string) (cache.ListerWatcher, runtime.Object) {
	var (
		list    func(context.Context, metav1.ListOptions) (runtime.Object, error)
		watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
		example runtime.Object
	)
	switch {
	case builtinTyped[r.gvr] != nil && !metadataOnly(r):
		example = builtinTyped[r.gvr]()
		rc := s.typedREST(r.gvr)
		lw := cache.NewFilteredListWatchFromClient(rc, r.gvr.Resource, namespace, func(*metav1.ListOptions) {})
		list, watchFn = lw.ListWithContext, lw.WatchWithContext
	case metadataOnly(r):
		example = &metav1.PartialObjectMetadata{}
		ri := s.meta.Resource(r.gvr)
		if namespace != "" {
			list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return ri.Namespace(namespace).List(ctx, o)
			}
			watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return ri.Namespace(namespace).Watch(ctx, o)
			}
		} else {
			list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, o) }
			watchFn = ri.Watch
		}
	default:
		example = &unstructured.Unstructured{}
		ri := s.dyn.Resource(r.gvr)
		if namespace != "" {
			list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return ri.Namespace(namespace).List(ctx, o)
			}
			watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return ri.Namespace(namespace).Watch(ctx, o)
			}
		} else {
			list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, o) }
			watchFn = ri.Watch
		}
	}
	label := r.label()
	timeout := int64(s.c.cfg.WatchTimeout / time.Second)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, o)
			s.c.health.request(label, "list", r.gvr.Resource, r.gvr.Group, namespace, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.TimeoutSeconds == nil || *o.TimeoutSeconds < timeout {
				// Spread the renewals: [timeout, 1.5*timeout).
				t := timeout + int64(jitter(time.Duration(timeout/2)*time.Second)/time.Second)
				o.TimeoutSeconds = &t
			}
			w, err := watchFn(ctx, o)
			// A streaming list is a watch on the wire, authorized as watch.
			s.c.health.request(label, "watch", r.gvr.Resource, r.gvr.Group, namespace, err)
			return w, err
		},
	}, example
}

// startWatch starts the informers of a resource.
func (s *session) startWatch(ctx context.Context, r resource) *kindWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &kindWatch{res: r, cancel: cancel, done: make(chan struct{})}
	namespaces := []string{""}
	if len(s.c.cfg.Namespaces) > 0 && r.namespaced {
		namespaces = s.c.cfg.Namespaces
	}
	apiVersion := r.gvr.GroupVersion().String()
	tf := transformer{norm: s.c.norm, apiVersion: apiVersion, kind: r.kind}
	label := r.label()
	s.c.health.watched(label)
	for _, ns := range namespaces {
		lw, example := s.listWatch(r, ns)
		inf := cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{
			ObjectDescription: label,
		})
		if err := inf.SetTransform(tf.transform); err != nil {
			s.c.log.Error("informer transform", zap.String("kind", label), zap.Error(err))
		}
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			s.c.log.Debug("watch ended", zap.String("kind", label), zap.Error(err))
		})
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.upsert(obj) },
			UpdateFunc: func(_, obj any) { s.upsert(obj) },
			DeleteFunc: func(obj any) { s.remove(obj) },
		})
		if err != nil {
			s.c.log.Error("informer handler", zap.String("kind", label), zap.Error(err))
		} else {
			w.handlers = append(w.handlers, reg)
		}
		w.informers = append(w.informers, inf)
	}
	go func() {
		defer close(w.done)
		done := make(chan struct{})
		for _, inf := range w.informers {
			go func() { inf.RunWithContext(ctx); done <- struct{}{} }()
		}
		for range w.informers {
			<-done
		}
	}()
	s.c.log.Info("watching", zap.String("kind", label), zap.String("resource", r.gvr.String()), zap.Bool("metadataOnly", metadataOnly(r)))
	return w
}

// stop ends the watch and waits for its informers.
func (w *kindWatch) stop() {
	w.cancel()
	<-w.done
}
