package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/bomstream/bomstream/collector"
)

// ConfigMaps in a cluster: the collector reads the ConfigMaps that the
// workloads it reports read (collector.Draft.ConfigMaps: their pods' env,
// envFrom and volumes, a KAITO Workspace's config), and those the objects
// it keeps for them name (a KServe runtime's), and no other. Secrets are
// never read.
//
// ConfigMaps are watched (one watch, or one per namespace in the
// namespace-restricted mode, started once the workload kinds have listed,
// so that it knows who reads what), and the informer's transform keeps
// nothing of a ConfigMap but its name and version, except the data of one
// that an object in scope reads. A ConfigMap that becomes read after it
// was listed (a new workload, a kind discovered later) is read with one
// GET before the workload is decided; one no object reads any more is
// forgotten. Every change of a ConfigMap queues the top-level workloads of
// the objects that read it, and only those: an edit is a new version of
// exactly the workloads that read it.

const configMapKind = "ConfigMap"

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// configMaps is what the session keeps of ConfigMaps.
type configMaps struct {
	mu sync.Mutex
	// readers: namespace/name -> the uids of the objects that read it.
	readers map[string]map[string]bool
	// reads: uid -> the keys (namespace/name) it reads, as last indexed.
	reads map[string][]string
	// data: namespace/name -> a ConfigMap an object in scope reads, as the
	// Lookup returns it (apiVersion, kind, metadata name and namespace,
	// data).
	data map[string]map[string]any
	// watch is the ConfigMap watch, nil until it starts.
	watch *kindWatch
}

func newConfigMaps() *configMaps {
	return &configMaps{readers: map[string]map[string]bool{}, reads: map[string][]string{}, data: map[string]map[string]any{}}
}

func configMapKey(namespace, name string) string { return namespace + "/" + name }

// setReads records the ConfigMaps (keys) uid reads, in place of what it
// read before; a ConfigMap no one reads any more is forgotten.
func (c *configMaps) setReads(uid string, keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.reads[uid] {
		if slices.Contains(keys, k) {
			continue
		}
		delete(c.readers[k], uid)
		if len(c.readers[k]) == 0 {
			delete(c.readers, k)
			delete(c.data, k)
		}
	}
	if len(keys) == 0 {
		delete(c.reads, uid)
		return
	}
	c.reads[uid] = keys
	for _, k := range keys {
		if c.readers[k] == nil {
			c.readers[k] = map[string]bool{}
		}
		c.readers[k][uid] = true
	}
}

// readersOf are the uids of the objects that read the ConfigMap key.
func (c *configMaps) readersOf(key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.readers[key]))
}

// get is the ConfigMap key as the Lookup returns it, if it is kept.
func (c *configMaps) get(key string) (map[string]any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.data[key]
	return obj, ok
}

// observe keeps the data of cm when an object in scope reads it, and
// drops it otherwise. fresh says whether cm comes from the watch (always
// kept) or from a GET (kept only while no newer copy is).
func (c *configMaps) observe(cm *corev1.ConfigMap, inScope, fresh bool) {
	key := configMapKey(cm.Namespace, cm.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, have := c.data[key]
	switch {
	case len(c.readers[key]) == 0 || !inScope:
		delete(c.data, key)
	case fresh || !have:
		data := make(map[string]any, len(cm.Data))
		for k, v := range cm.Data {
			data[k] = v
		}
		c.data[key] = map[string]any{
			"apiVersion": "v1", "kind": configMapKind,
			"metadata": map[string]any{"name": cm.Name, "namespace": cm.Namespace},
			"data":     data,
		}
	}
}

// forget drops the data of a deleted ConfigMap.
func (c *configMaps) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.data, key)
}

// missing are the keys among keys that are read but not kept.
func (c *configMaps) missing(keys []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, k := range keys {
		if _, ok := c.data[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// listed reports whether the ConfigMap watch holds key (the ConfigMap
// exists, as far as the watch has seen).
func (c *configMaps) listed(key string) bool {
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	if w == nil {
		return false
	}
	for _, inf := range w.informers {
		if _, ok, err := inf.GetStore().GetByKey(key); err == nil && ok {
			return true
		}
	}
	return false
}

// readsOfLocked are the keys of the ConfigMaps o reads, with those of its
// full read when it was read in full.
func (s *session) readsOfLocked(o *object) []string {
	names := o.configMaps
	if f := s.fetched[string(o.UID)]; f != nil {
		names = append(slices.Clone(names), f.configMaps...)
	}
	if len(names) == 0 {
		return nil
	}
	keys := make([]string, 0, len(names))
	for _, n := range names {
		keys = append(keys, configMapKey(o.Namespace, n))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// startConfigMapWatch watches ConfigMaps, in every namespace or in each
// listed one.
func (s *session) startConfigMapWatch(ctx context.Context) {
	r := resource{kind: collector.Kind{Kind: configMapKind}, gvr: configMapsGVR, namespaced: true}
	ctx, cancel := context.WithCancel(ctx)
	w := &kindWatch{res: r, cancel: cancel, done: make(chan struct{})}
	namespaces := []string{""}
	if len(s.c.cfg.Namespaces) > 0 {
		namespaces = s.c.cfg.Namespaces
	}
	s.c.health.watched(configMapKind)
	for _, ns := range namespaces {
		lw, example := s.listWatch(r, ns)
		inf := cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{ObjectDescription: configMapKind})
		if err := inf.SetTransform(s.configMapTransform); err != nil {
			s.c.log.Error("informer transform", zap.String("kind", configMapKind), zap.Error(err))
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.configMapChanged(obj, false) },
			UpdateFunc: func(_, obj any) { s.configMapChanged(obj, false) },
			DeleteFunc: func(obj any) { s.configMapChanged(obj, true) },
		})
		if err == nil {
			w.handlers = append(w.handlers, reg)
		}
		w.informers = append(w.informers, inf)
	}
	s.cms.mu.Lock()
	s.cms.watch = w
	s.cms.mu.Unlock()
	go func() {
		defer close(w.done)
		var wg sync.WaitGroup
		for _, inf := range w.informers {
			wg.Go(func() { ; inf.RunWithContext(ctx) })
		}
		wg.Wait()
	}()
	s.c.log.Info("watching", zap.String("kind", configMapKind), zap.String("resource", configMapsGVR.String()))
}

// configMapTransform is the ConfigMap informer's transform: it keeps the
// data of a ConfigMap an object in scope reads (configMaps.observe) and
// caches only its name and version.
func (s *session) configMapTransform(in any) (any, error) {
	cm, ok := in.(*corev1.ConfigMap)
	if !ok {
		return in, nil
	}
	s.cms.observe(cm, s.namespaceInScope(cm.Namespace), true)
	return &object{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: configMapKind},
		objectMeta: objectMeta{Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID, ResourceVersion: cm.ResourceVersion}}, nil
}

// configMapChanged queues the workloads that read a ConfigMap that was
// added, changed or deleted.
func (s *session) configMapChanged(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(*object)
	if !ok {
		return
	}
	key := configMapKey(o.Namespace, o.Name)
	if deleted {
		s.cms.forget(key)
	}
	readers := s.cms.readersOf(key)
	if len(readers) == 0 {
		return
	}
	s.mu.Lock()
	var tops []string
	for _, uid := range readers {
		r := s.objs[uid]
		switch {
		case r == nil:
		case r.linked:
			// A runtime's ConfigMap: a change of the runtime.
			for u := range s.linking[r.Namespace] {
				tops = append(tops, u)
			}
		default:
			tops = append(tops, s.topLocked(r))
		}
	}
	s.mu.Unlock()
	s.enqueue(tops...)
}

// ensureConfigMaps reads with a GET the ConfigMaps that the objects of
// uids (and what they claim, or control for a generic owner) read, that
// exist, but whose data was not kept because no one read them when they
// were listed.
func (s *session) ensureConfigMaps(ctx context.Context, uids []string) error {
	s.mu.Lock()
	var keys []string
	for _, uid := range uids {
		o := s.objs[uid]
		if o == nil || !s.inScopeLocked(o) {
			continue
		}
		keys = append(keys, s.readsOfLocked(o)...)
		if o.inputs == nil {
			continue
		}
		for _, ref := range collector.Claims(o.inputs) {
			if part := s.objs[s.named[linkKey(groupOf(ref.APIVersion), ref.Kind, o.Namespace, ref.Name)]]; part != nil {
				keys = append(keys, s.readsOfLocked(part)...)
			}
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, key := range s.cms.missing(keys) {
		if !s.cms.listed(key) {
			continue // no such ConfigMap: the names only
		}
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		cm, err := s.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("get configmap %s: %w", key, err))
			continue
		}
		s.cms.observe(cm, s.namespaceInScope(ns), false)
	}
	return errors.Join(errs...)
}

// configMapReadersLocked are the uids of the objects that read ConfigMaps.
func (s *session) configMapReadersLocked() []string {
	var out []string
	for uid, o := range s.objs {
		if len(o.configMaps) > 0 || s.fetched[uid] != nil && len(s.fetched[uid].configMaps) > 0 {
			out = append(out, uid)
		}
	}
	return out
}
