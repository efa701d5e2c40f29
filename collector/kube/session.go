package kube

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/bomstream/bomstream/schemas"
)

// session is one run of the watch: its clients, informers and object graph.
type session struct {
	c     *Collector
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	meta  metadata.Interface
	disco discovery.DiscoveryInterface

	mu       sync.Mutex
	objs     map[string]*object  // uid -> object, every watched kind
	children map[string][]string // owner uid -> controlled uids (a slice: most owners control one)
	retained map[string][]schemas.ImageDigest
	fetched  map[string]*object // metadata-only top-level objects read in full
	watches  map[string]*kindWatch
	// started: the caches have settled and the first pass reads the graph
	// from here on; before, nothing is queued, and kinds that sync later
	// trigger passes only after.
	started atomic.Bool
	gone    map[string]bool
	skipLog map[string]string // uid -> resourceVersion whose skip was logged

	// What links, claims and generic owners need (links.go).
	linkIdx map[string]map[string]*object // group, kind, namespace -> name -> linked object
	linking map[string]map[string]bool    // namespace -> uids of linking workloads
	named   map[string]string             // group, kind, namespace, name -> uid of a claimable object
	claims  map[string]string             // group, kind, namespace, name -> uid of its claimer
	generic map[string]string             // uid of a published generic owner -> its kind label
	cms     *configMaps                   // the ConfigMaps workloads read (configmaps.go)

	scope    *namespaceScope
	crdWatch *kindWatch

	queue  workqueue.TypedDelayingInterface[string]
	passes chan struct{}
	disc   chan struct{}
	wg     sync.WaitGroup
}

// newSession builds the clients and the empty state of one session.
func (c *Collector) newSession() (*session, error) {
	proto := rest.CopyConfig(c.rest)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kc, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.rest)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	meta, err := metadata.NewForConfig(c.rest)
	if err != nil {
		return nil, fmt.Errorf("kubernetes metadata client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.rest)
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery client: %w", err)
	}
	return &session{
		c: c, kube: kc, dyn: dyn, meta: meta, disco: disco,
		objs: map[string]*object{}, children: map[string][]string{},
		retained: map[string][]schemas.ImageDigest{}, fetched: map[string]*object{},
		watches: map[string]*kindWatch{}, gone: map[string]bool{}, skipLog: map[string]string{},
		linkIdx: map[string]map[string]*object{}, linking: map[string]map[string]bool{},
		named: map[string]string{}, claims: map[string]string{}, generic: map[string]string{},
		cms:    newConfigMaps(),
		queue:  workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: ""}),
		passes: make(chan struct{}, 1), disc: make(chan struct{}, 1),
	}, nil
}

// typedREST is the REST client of the typed clientset for a built-in
// group (core, apps or batch).
func (s *session) typedREST(gvr schema.GroupVersionResource) rest.Interface {
	switch gvr.Group {
	case "apps":
		return s.kube.AppsV1().RESTClient()
	case "batch":
		return s.kube.BatchV1().RESTClient()
	}
	return s.kube.CoreV1().RESTClient()
}

// start loads the last state from CHANGES, starts the watches and waits
// (at most SyncTimeout) until every kind has listed or failed.
func (s *session) start(ctx context.Context) error {
	if err := s.c.rec.Load(ctx, func(ev schemas.WorkloadChange) {
		if ev.Data.Inputs != nil && len(ev.Data.Inputs.Digests) > 0 {
			s.retained[ev.Data.Workload.UID] = ev.Data.Inputs.Digests
		}
	}); err != nil {
		return err
	}
	s.c.health.setOnHealthy(func(string) { s.requestPass() })
	if err := s.startScope(ctx); err != nil {
		return err
	}
	if len(s.c.cfg.Namespaces) == 0 {
		s.startCRDWatch(ctx)
	}
	s.rediscover(ctx)
	s.waitSettled(ctx)
	// ConfigMaps are listed once the workloads are, so that the list
	// keeps the data of the ones they read (configmaps.go).
	s.startConfigMapWatch(ctx)
	s.waitSettled(ctx)
	s.started.Store(true)
	s.probe(ctx)
	return ctx.Err()
}

// waitSettled waits, at most SyncTimeout, until every watch has synced
// or is failing.
func (s *session) waitSettled(ctx context.Context) {
	deadline := time.Now().Add(s.c.cfg.SyncTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil && !s.settled() {
		sleep(ctx, 20*time.Millisecond)
	}
}

// settled reports whether every watch has synced or is failing.
func (s *session) settled() bool {
	s.mu.Lock()
	ws := make([]*kindWatch, 0, len(s.watches))
	for _, w := range s.watches {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	if s.scope != nil && s.scope.watch != nil && !s.scope.watch.synced() && s.c.health.ok(namespaceKind) {
		return false
	}
	s.cms.mu.Lock()
	if w := s.cms.watch; w != nil {
		ws = append(ws, w)
	}
	s.cms.mu.Unlock()
	for _, w := range ws {
		if !w.synced() && s.c.health.ok(w.res.label()) {
			return false
		}
	}
	return true
}

// live runs the watch until ctx is done: the publish workers, the
// tombstone passes, the probes, discovery and reconcile passes on demand.
func (s *session) live(ctx context.Context) {
	for range 4 {
		s.wg.Go(func() {
			for s.work(ctx) {
			}
		})
	}
	tomb := time.NewTicker(s.c.cfg.TombstoneInterval)
	probe := time.NewTicker(s.c.cfg.ProbeInterval)
	disc := time.NewTicker(s.c.cfg.DiscoveryInterval)
	defer func() { tomb.Stop(); probe.Stop(); disc.Stop() }()
	for {
		select {
		case <-ctx.Done():
			s.queue.ShutDown()
			s.wg.Wait()
			return
		case <-tomb.C:
			s.flushGone(ctx)
		case <-probe.C:
			s.probe(ctx)
		case <-disc.C:
			// Polled only where CRDs cannot be watched.
			if s.crdWatch == nil || !s.c.health.ok(crdKind) {
				s.rediscover(ctx)
			}
		case <-s.disc:
			s.rediscover(ctx)
		case <-s.passes:
			events, _ := s.desired(ctx)
			res, err := s.c.rec.Sync(ctx, events, s.visible, time.Now())
			s.c.log.Info("reconcile pass", zap.Int("workloads", res.Workloads), zap.Int("published", res.Published),
				zap.Int("tombstones", res.Tombstones), zap.Int("held", res.Held), zap.Error(err))
		}
	}
}

// requestPass asks the live loop for a reconcile pass, once the first
// pass is done; requests that arrive while one is pending are one.
func (s *session) requestPass() {
	if !s.started.Load() {
		return
	}
	select {
	case s.passes <- struct{}{}:
	default:
	}
}

// requestDiscovery asks the live loop to run discovery again; requests
// that arrive while one is pending are one.
func (s *session) requestDiscovery() {
	select {
	case s.disc <- struct{}{}:
	default:
	}
}

// rediscover resolves the profile kinds and starts and stops watches to
// match: a CRD that appeared is watched, one that went away is not.
func (s *session) rediscover(ctx context.Context) {
	found, err := resolve(s.disco, s.c.kinds)
	s.c.log.Debug("discovery", zap.Int("kinds", len(found)), zap.Error(err))
	if err != nil {
		s.c.log.Warn("discovery", zap.Error(err))
		if found == nil {
			return
		}
	}
	s.mu.Lock()
	var stop []*kindWatch
	for label, w := range s.watches {
		r, ok := found[label]
		if !ok && err != nil && w.res.thirdParty() {
			continue // partial discovery: keep what may still be there
		}
		if !ok || r.gvr != w.res.gvr {
			stop = append(stop, w)
			delete(s.watches, label)
		}
	}
	var start []resource
	for label, r := range found {
		if s.watches[label] == nil {
			start = append(start, r)
		}
	}
	s.mu.Unlock()
	for _, w := range stop {
		w.stop()
		s.forget(w.res)
		s.c.health.gone(w.res.label())
		s.c.log.Info("watch stopped: resource no longer served", zap.String("kind", w.res.label()), zap.String("resource", w.res.gvr.String()))
	}
	slices.SortFunc(start, func(a, b resource) int { return compareStrings(a.label(), b.label()) })
	for _, r := range start {
		w := s.startWatch(ctx, r)
		s.mu.Lock()
		s.watches[r.label()] = w
		s.mu.Unlock()
	}
	if len(start) > 0 {
		// A kind that starts after the first pass reconciles once it lists.
		go s.passWhenSynced(ctx, start)
	}
}

// passWhenSynced waits until the watches of rs have synced (or stopped),
// then, after the first pass, probes and requests a reconcile pass.
func (s *session) passWhenSynced(ctx context.Context, rs []resource) {
	for ctx.Err() == nil {
		started := s.started.Load()
		s.mu.Lock()
		all := true
		for _, r := range rs {
			if w := s.watches[r.label()]; w != nil && !w.synced() {
				all = false
			}
		}
		s.mu.Unlock()
		if all {
			if started {
				s.probe(ctx)
				s.requestPass()
			}
			return
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// forget drops the objects of a resource that is no longer watched. Their
// workloads are not tombstoned: lost visibility is not deletion.
func (s *session) forget(r resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, o := range s.objs {
		if o.Kind == r.kind.Kind && groupOf(o.APIVersion) == r.kind.Group {
			s.unlinkLocked(o)
			delete(s.objs, uid)
			delete(s.fetched, uid)
			s.cms.setReads(uid, nil)
		}
	}
}

// stopAll stops the queue and every watch of the session.
func (s *session) stopAll() {
	s.queue.ShutDown()
	s.mu.Lock()
	ws := make([]*kindWatch, 0, len(s.watches)+2)
	for _, w := range s.watches {
		ws = append(ws, w)
	}
	s.watches = map[string]*kindWatch{}
	s.mu.Unlock()
	if s.crdWatch != nil {
		ws = append(ws, s.crdWatch)
	}
	if s.scope != nil && s.scope.watch != nil {
		ws = append(ws, s.scope.watch)
	}
	s.cms.mu.Lock()
	if s.cms.watch != nil {
		ws = append(ws, s.cms.watch)
	}
	s.cms.mu.Unlock()
	for _, w := range ws {
		w.stop()
		s.c.health.gone(w.res.label())
	}
}

// probe reads one object of every third-party kind with an uncached GET:
// a conversion webhook that is down fails it while list and watch keep
// being served from the API server's cache.
func (s *session) probe(ctx context.Context) {
	s.mu.Lock()
	ws := make([]*kindWatch, 0, len(s.watches))
	for _, w := range s.watches {
		if w.res.thirdParty() {
			ws = append(ws, w)
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.probeKind(pctx, w)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.c.health.probe(w.res.label(), err)
	}
}

// probeKind reads one object of w's kind through the API server: one the
// cache holds (a conversion webhook that is gone fails the read), or, when
// the cache holds none (nothing of the kind exists, or its first list has
// not completed, as when a webhook was down at start), a list of at most
// one. A kind the collector cannot read is thus reported, never taken for
// an empty one.
func (s *session) probeKind(ctx context.Context, w *kindWatch) error {
	ns, name, ok := w.anyObject()
	var err error
	switch {
	case !ok:
		var ri dynamic.ResourceInterface = s.dyn.Resource(w.res.gvr)
		if w.res.namespaced && len(s.c.cfg.Namespaces) > 0 {
			ri = s.dyn.Resource(w.res.gvr).Namespace(s.c.cfg.Namespaces[0]) // what its RBAC allows
		}
		_, err = ri.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return fmt.Errorf("list %s: %w", w.res.gvr.Resource, err)
		}
		if !w.synced() {
			return fmt.Errorf("list %s: the watch has not completed its first list", w.res.gvr.Resource)
		}
		return nil
	case w.res.namespaced:
		_, err = s.dyn.Resource(w.res.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		_, err = s.dyn.Resource(w.res.gvr).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get %s %s/%s: %w", w.res.gvr.Resource, ns, name, err)
	}
	return nil
}
