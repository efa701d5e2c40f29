package kube

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/bomstream/bomstream/collector"
)

// Health labels of the two watches that are not kinds of workloads.
const (
	namespaceKind = "Namespace"
	crdKind       = "CustomResourceDefinition.apiextensions.k8s.io"
)

// namespaceScope says which namespaces are watched. With a fixed list it is
// that list; with a selector it follows a metadata-only watch of the
// namespaces that match it (a namespace that gains the label is picked up,
// one that loses it is out of scope and its workloads are tombstoned, which
// the reconciler's guard holds when they are many).
type namespaceScope struct {
	all   bool
	mu    sync.Mutex
	in    map[string]bool
	watch *kindWatch // selector mode only
}

func (s *session) startScope(ctx context.Context) error {
	cfg := s.c.cfg
	switch {
	case len(cfg.Namespaces) > 0:
		sc := &namespaceScope{in: map[string]bool{}}
		for _, ns := range cfg.Namespaces {
			sc.in[ns] = true
		}
		s.scope = sc
		return nil
	case cfg.AllNamespaces:
		s.scope = &namespaceScope{all: true}
		return nil
	}
	sc := &namespaceScope{in: map[string]bool{}}
	s.scope = sc
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	res := resource{kind: collector.Kind{Kind: namespaceKind, ClusterScoped: true}, gvr: gvr}
	selector := cfg.NamespaceSelector
	ri := s.meta.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			obj, err := ri.List(ctx, o)
			s.c.health.request(namespaceKind, "list", "namespaces", "", "", err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			t := int64(cfg.WatchTimeout.Seconds())
			o.TimeoutSeconds = &t
			w, err := ri.Watch(ctx, o)
			s.c.health.request(namespaceKind, "watch", "namespaces", "", "", err)
			return w, err
		},
	}
	s.c.health.watched(namespaceKind)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{ObjectDescription: namespaceKind})
	changed := func(name string, in bool) {
		sc.mu.Lock()
		was := sc.in[name]
		if in {
			sc.in[name] = true
		} else {
			delete(sc.in, name)
		}
		sc.mu.Unlock()
		if was != in {
			s.c.log.Info("namespace scope", zap.String("namespace", name), zap.Bool("watched", in))
			s.enqueueNamespace(name)
		}
	}
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			return m.GetName()
		}
		return ""
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(name(obj), true) },
		UpdateFunc: func(_, obj any) { changed(name(obj), true) },
		DeleteFunc: func(obj any) { changed(name(obj), false) },
	})
	w := s.runInformer(ctx, res, inf)
	sc.watch = w
	return nil
}

// startCRDWatch watches CustomResourceDefinitions (metadata only) and runs
// discovery whenever one changes, so a CRD that is installed is watched
// within seconds, with no restart. Where CRDs cannot be listed, discovery is
// polled instead.
func (s *session) startCRDWatch(ctx context.Context) {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	res := resource{kind: collector.Kind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", ClusterScoped: true}, gvr: gvr}
	ri := s.meta.Resource(gvr)
	timeout := int64(s.c.cfg.WatchTimeout.Seconds())
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := ri.List(ctx, o)
			s.c.health.request(crdKind, "list", gvr.Resource, gvr.Group, "", err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.TimeoutSeconds = &timeout
			w, err := ri.Watch(ctx, o)
			s.c.health.request(crdKind, "watch", gvr.Resource, gvr.Group, "", err)
			return w, err
		},
	}
	s.c.health.watched(crdKind)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{ObjectDescription: crdKind})
	_ = inf.SetTransform(func(in any) (any, error) {
		if m, ok := in.(*metav1.PartialObjectMetadata); ok {
			return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
				Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
			}}, nil
		}
		return in, nil
	})
	synced := false
	var mu sync.Mutex
	changed := func() {
		mu.Lock()
		ready := synced
		mu.Unlock()
		if ready {
			// Discovery follows CRDs with a lag (a CRD is served a moment
			// after it is established, and stops being served a moment after
			// it is gone): look now and again a little later.
			s.requestDiscovery()
			for _, d := range []time.Duration{time.Second, 3 * time.Second, 10 * time.Second} {
				time.AfterFunc(d, s.requestDiscovery)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	})
	s.crdWatch = s.runInformer(ctx, res, inf)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			mu.Lock()
			synced = true
			mu.Unlock()
		}
	}()
}

// runInformer runs one informer as a kindWatch.
func (s *session) runInformer(ctx context.Context, res resource, inf cache.SharedIndexInformer) *kindWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &kindWatch{res: res, informers: []cache.SharedIndexInformer{inf}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		inf.RunWithContext(ctx)
	}()
	return w
}

func (s *session) enqueueNamespace(ns string) {
	s.mu.Lock()
	var uids []string
	for uid, o := range s.objs {
		if o.Namespace == ns && !o.rolledUp {
			uids = append(uids, uid)
		}
	}
	s.mu.Unlock()
	s.enqueue(uids...)
}

// inScopeLocked reports whether o's namespace is watched.
func (s *session) inScopeLocked(o *object) bool { return s.namespaceInScope(o.Namespace) }

// namespaceInScope reports whether the namespace ns is watched.
func (s *session) namespaceInScope(ns string) bool {
	sc := s.scope
	if sc == nil || sc.all {
		return true
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.in[ns]
}

// scopeKnown reports whether the set of watched namespaces is known, so
// that a workload missing from it is really out of scope.
func (s *session) scopeKnown() bool {
	sc := s.scope
	if sc == nil || sc.watch == nil {
		return true
	}
	return sc.watch.synced() && s.c.health.ok(namespaceKind)
}
