package kube

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

// SourcePrefix starts the source name of every cluster collector; the
// cluster name follows.
const SourcePrefix = "bomstream/cluster/"

// Collector watches one cluster and publishes a WorkloadChange whenever a
// workload's inputs change, a tombstone when one is deleted. Build it with
// New; Run it (leader-elected) or call Once.
type Collector struct {
	cfg      Config
	rest     *rest.Config
	norm     *collector.Normalizer
	rec      *collector.Reconciler
	log      *zap.Logger
	health   *health
	requests *requestMetrics
	kinds    []collector.Kind
	leading  atomic.Bool
	// genericGauge is bomstream_generic_workloads{kind}.
	genericGauge *prometheus.GaugeVec
}

// New validates cfg and builds a collector over rc (the client
// configuration, see RESTConfig). Its metrics are registered on reg (nil: not
// registered). norm must be configured for cfg.Cluster.
func New(cfg Config, rc *rest.Config, norm *collector.Normalizer, pub collector.Publisher, log *zap.Logger, reg prometheus.Registerer) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if norm.Cluster() != cfg.Cluster {
		return nil, fmt.Errorf("kubernetes collector: the normalizer is for cluster %q, not %q", norm.Cluster(), cfg.Cluster)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = zap.NewNop()
	}
	rec, err := collector.NewReconciler(collector.ReconcilerConfig{
		Source: SourcePrefix + cfg.Cluster, Cluster: cfg.Cluster,
		MaxTombstoneShare: cfg.MaxTombstoneShare, ConfirmTombstones: cfg.ConfirmTombstones,
	}, pub, log, reg)
	if err != nil {
		return nil, err
	}
	c := &Collector{cfg: cfg, norm: norm, rec: rec, log: log, health: newHealth(log), requests: newRequestMetrics(), kinds: norm.Kinds(),
		genericGauge: collector.NewGenericGauge()}
	if reg != nil {
		if err := c.health.register(reg); err != nil {
			return nil, err
		}
		if err := reg.Register(c.requests.requests); err != nil {
			return nil, fmt.Errorf("collector metrics: %w", err)
		}
		if err := reg.Register(c.genericGauge); err != nil {
			return nil, fmt.Errorf("collector metrics: %w", err)
		}
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if rc.UserAgent == "" {
		rc.UserAgent = "bomstream-collector"
	}
	c.rest = c.requests.wrap(rc)
	return c, nil
}

// Source is the source name of this collector's events.
func (c *Collector) Source() string { return c.rec.Source() }

// Health reports every watched kind (Kind.group), with nil when it is
// healthy and the reason when it is degraded (forbidden, failing list or
// watch, failing single-object probe). Kinds whose CRD is not installed are
// not watched and not listed. Safe for concurrent use.
func (c *Collector) Health() map[string]error { return c.health.report() }

// Leading reports whether this replica currently holds the Lease (always
// true while it runs without leader election).
func (c *Collector) Leading() bool { return c.leading.Load() }

// OnceResult is what Once found and did.
type OnceResult struct {
	// Events are the current events of every workload seen, serving or not.
	Events []schemas.WorkloadChange
	// Skipped says why objects of workload kinds produced no event.
	Skipped []string
	Sync    collector.SyncResult
	// Degraded are the kinds that could not be listed.
	Degraded map[string]error
}

// Once lists the cluster, reconciles it against CHANGES (publishing what
// changed and tombstoning what is gone) and returns, without leader election
// and without watching on.
func (c *Collector) Once(ctx context.Context) (OnceResult, error) {
	s, err := c.newSession()
	if err != nil {
		return OnceResult{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); s.stopAll() }()
	if err := s.start(ctx); err != nil {
		return OnceResult{}, err
	}
	events, skipped := s.desired(ctx)
	res, err := c.rec.Sync(ctx, events, s.visible, time.Now())
	out := OnceResult{Events: events, Skipped: skipped, Sync: res, Degraded: map[string]error{}}
	for k, e := range c.Health() {
		if e != nil {
			out.Degraded[k] = e
		}
	}
	return out, err
}

// Run watches until ctx is done. With leader election (the default) only the
// replica holding the Lease watches and publishes; the others wait to take
// over. A failing session is logged and started again after a pause; Run
// returns nil when ctx is done.
func (c *Collector) Run(ctx context.Context) error {
	if c.cfg.LeaderElection.Disabled {
		for ctx.Err() == nil {
			if err := c.lead(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("collector session ended; starting again", zap.Error(err))
				sleep(ctx, 5*time.Second)
			}
		}
		return nil
	}
	return c.elect(ctx)
}

// lead is one session as the publishing replica.
func (c *Collector) lead(ctx context.Context) error {
	c.leading.Store(true)
	defer c.leading.Store(false)
	s, err := c.newSession()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); s.stopAll() }()
	if err := s.start(ctx); err != nil {
		return err
	}
	events, _ := s.desired(ctx)
	res, err := c.rec.Sync(ctx, events, s.visible, time.Now())
	c.log.Info("cluster reconciled", zap.Int("workloads", res.Workloads), zap.Int("published", res.Published),
		zap.Int("tombstones", res.Tombstones), zap.Int("held", res.Held), zap.Error(err))
	if err != nil {
		// Whatever failed is retried by the workers; what succeeded is a
		// no-op for them.
		for _, ev := range events {
			s.enqueue(ev.Data.Workload.UID)
		}
	}
	if c.cfg.Reconciled != nil {
		c.cfg.Reconciled()
	}
	s.live(ctx)
	return nil
}

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

	scope    *namespaceScope
	crdWatch *kindWatch

	queue  workqueue.TypedDelayingInterface[string]
	passes chan struct{}
	disc   chan struct{}
	wg     sync.WaitGroup
}

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
		queue:  workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: ""}),
		passes: make(chan struct{}, 1), disc: make(chan struct{}, 1),
	}, nil
}

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
	deadline := time.Now().Add(s.c.cfg.SyncTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if s.settled() {
			break
		}
		sleep(ctx, 20*time.Millisecond)
	}
	s.started.Store(true)
	s.probe(ctx)
	return ctx.Err()
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
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for s.work(ctx) {
			}
		}()
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

func (s *session) requestPass() {
	if !s.started.Load() {
		return
	}
	select {
	case s.passes <- struct{}{}:
	default:
	}
}

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
		}
	}
}

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
	for _, w := range ws {
		w.stop()
		s.c.health.gone(w.res.label())
	}
}

// upsert records an added or updated object and queues the workloads it
// belongs to (before and after the change).
func (s *session) upsert(obj any) {
	o, ok := obj.(*object)
	if !ok {
		return
	}
	uid := string(o.UID)
	s.mu.Lock()
	var tops []string
	if old := s.objs[uid]; old != nil {
		tops = append(tops, s.topLocked(old))
		tops = append(tops, s.indexLocked(old, false)...)
		s.unlinkLocked(old)
	}
	s.objs[uid] = o
	if o.owner != nil {
		s.children[o.owner.UID] = append(s.children[o.owner.UID], uid)
	}
	tops = append(tops, s.indexLocked(o, true)...)
	tops = append(tops, s.topLocked(o))
	if f := s.fetched[uid]; f != nil && f.Generation != o.Generation {
		delete(s.fetched, uid)
	}
	s.mu.Unlock()
	s.enqueue(tops...)
}

func (s *session) remove(obj any) {
	var o *object
	switch x := obj.(type) {
	case *object:
		o = x
	case cache.DeletedFinalStateUnknown:
		o, _ = x.Obj.(*object)
	}
	if o == nil {
		return
	}
	uid := string(o.UID)
	s.mu.Lock()
	tops := []string{s.topLocked(o), uid}
	if cur := s.objs[uid]; cur != nil {
		tops = append(tops, s.indexLocked(cur, false)...)
		s.unlinkLocked(cur)
		delete(s.objs, uid)
	}
	delete(s.fetched, uid)
	s.mu.Unlock()
	s.enqueue(tops...)
}

func (s *session) unlinkLocked(o *object) {
	if o.owner == nil {
		return
	}
	kids := slices.DeleteFunc(s.children[o.owner.UID], func(uid string) bool { return uid == string(o.UID) })
	if len(kids) == 0 {
		delete(s.children, o.owner.UID)
	} else {
		s.children[o.owner.UID] = kids
	}
}

func (s *session) lookupLocked(uid string) (collector.Object, bool) {
	o := s.objs[uid]
	if o == nil {
		return collector.Object{}, false
	}
	return s.refLocked(o), true
}

// topLocked is the uid of the top-level object o rolls up into, "" when it
// cannot be named yet (its owner is not seen) or the owners loop.
func (s *session) topLocked(o *object) string {
	top, err := s.c.norm.RollUp(s.refLocked(o), s.lookupLocked)
	var unseen *collector.UnseenOwnerError
	switch {
	case errors.As(err, &unseen) && s.genericKind(unseen.Owner.APIVersion, unseen.Owner.Kind):
		// An owner of a kind with a profile, but no watch to read it:
		// the owner is reported generically, by its reference.
		return unseen.Owner.UID
	case err != nil:
		if errors.Is(err, collector.ErrOwnerCycle) {
			s.c.log.Warn("skipped", zap.Error(err))
		}
		return ""
	}
	return top.UID
}

// enqueue queues workloads to be decided after the debounce. Before the
// first pass nothing is queued: that pass reads the whole graph as it is
// then, so queueing every object of the initial list would only decide each
// workload a second time (and grow the queue's maps to the size of the
// cluster, which Go maps never give back).
func (s *session) enqueue(uids ...string) {
	if !s.started.Load() {
		return
	}
	for _, uid := range uids {
		if uid != "" {
			s.queue.AddAfter(uid, s.c.cfg.Debounce)
		}
	}
}

// work processes one queued workload; false when the queue is shut down.
func (s *session) work(ctx context.Context) bool {
	uid, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(uid)
	if err := s.process(ctx, uid); err != nil && ctx.Err() == nil {
		s.c.log.Warn("publish failed; retrying", zap.String("uid", uid), zap.Error(err))
		s.queue.AddAfter(uid, 5*time.Second+jitter(5*time.Second))
	}
	return true
}

// process decides the state of one workload and publishes it when it
// changed; a workload that is gone waits for the next tombstone pass.
func (s *session) process(ctx context.Context, uid string) error {
	s.mu.Lock()
	need := []string{uid}
	if s.objs[uid] == nil {
		kids, _ := s.genericKidsLocked(uid)
		for _, k := range kids {
			need = append(need, string(k.UID))
		}
	}
	s.mu.Unlock()
	if err := s.ensureFetched(ctx, need); err != nil {
		return err
	}
	s.mu.Lock()
	o := s.objs[uid]
	var (
		ev      schemas.WorkloadChange
		digests []schemas.ImageDigest
		ok      bool
	)
	switch {
	case o == nil:
		// Maybe the owner of no known kind of some watched objects.
		if ev, digests, ok = s.genericEventLocked(uid, time.Now()); !ok {
			s.gone[uid] = true
			delete(s.generic, uid)
			s.countGenericLocked()
			s.mu.Unlock()
			return nil
		}
		s.countGenericLocked()
	case !s.topLevelLocked(o):
		s.gone[uid] = true
		s.mu.Unlock()
		return nil
	default:
		ev, digests, ok = s.eventLocked(o, time.Now())
	}
	delete(s.gone, uid)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if _, err := s.c.rec.Observe(ctx, ev); err != nil {
		return err
	}
	s.mu.Lock()
	s.retained[uid] = digests
	s.mu.Unlock()
	return nil
}

// desired is the event of every top-level workload in scope, and why the
// objects of workload kinds that have none were skipped.
func (s *session) desired(ctx context.Context) ([]schemas.WorkloadChange, []string) {
	s.mu.Lock()
	var need []string
	for uid, o := range s.objs {
		if s.fetched[uid] == nil && s.needsFetchLocked(o) {
			need = append(need, uid)
		}
	}
	s.mu.Unlock()
	if err := s.ensureFetched(ctx, need); err != nil {
		s.c.log.Warn("read top-level objects", zap.Error(err))
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var events []schemas.WorkloadChange
	var skipped []string
	for _, o := range s.objs {
		if !s.topLevelLocked(o) {
			continue
		}
		ev, digests, ok := s.eventLocked(o, now)
		if !ok {
			if err := s.skipOf(o); err != nil {
				skipped = append(skipped, err.Error())
			}
			continue
		}
		s.retained[string(o.UID)] = digests
		events = append(events, ev)
	}
	clear(s.generic)
	for _, owner := range s.genericOwnersLocked() {
		if ev, digests, ok := s.genericEventLocked(owner, now); ok {
			s.retained[owner] = digests
			events = append(events, ev)
		}
	}
	s.countGenericLocked()
	slices.SortFunc(events, func(a, b schemas.WorkloadChange) int { return compareStrings(a.Subject, b.Subject) })
	slices.Sort(skipped)
	return events, skipped
}

func (s *session) skipOf(o *object) error {
	if f := s.fetched[string(o.UID)]; f != nil {
		return f.skip
	}
	return o.skip
}

// eventLocked builds the event of a top-level object: its inputs plus the
// digests its pods report.
func (s *session) eventLocked(o *object, now time.Time) (schemas.WorkloadChange, []schemas.ImageDigest, bool) {
	uid := string(o.UID)
	base := o
	if o.metaOnly {
		base = s.fetched[uid]
		if base == nil {
			return schemas.WorkloadChange{}, nil, false
		}
	}
	if base.inputs == nil {
		if base.skip != nil && s.skipLog[uid] != o.ResourceVersion {
			s.skipLog[uid] = o.ResourceVersion
			s.c.log.Warn("skipped", zap.String("object", o.ref().String()), zap.Error(base.skip))
		}
		return schemas.WorkloadChange{}, nil, false
	}
	full, roots, ok := s.inputsLocked(o, base)
	if !ok {
		return schemas.WorkloadChange{}, nil, false
	}
	in := *full
	in.Digests = collector.Digests(full, s.podImagesLocked(roots...), s.retained[uid])
	ev, err := schemas.NewObserved(s.c.Source(), now, &in)
	if err != nil {
		if s.skipLog[uid] != o.ResourceVersion {
			s.skipLog[uid] = o.ResourceVersion
			s.c.log.Warn("skipped", zap.String("object", o.ref().String()), zap.Error(err))
		}
		return schemas.WorkloadChange{}, nil, false
	}
	return ev, in.Digests, true
}

// podImagesLocked collects what the pods under top-level objects report.
func (s *session) podImagesLocked(tops ...string) []collector.PodImage {
	var out []collector.PodImage
	seen := map[string]bool{}
	for _, t := range tops {
		seen[t] = true
	}
	queue := slices.Clone(tops)
	for len(queue) > 0 && len(seen) < 1_000_000 {
		uid := queue[0]
		queue = queue[1:]
		for _, child := range s.children[uid] {
			if seen[child] {
				continue
			}
			seen[child] = true
			if o := s.objs[child]; o != nil {
				out = append(out, o.images...)
				queue = append(queue, child)
			}
		}
	}
	return out
}

// ensureFetched reads in full the top-level objects among uids that were
// watched as metadata only (a ReplicaSet that no Deployment controls).
func (s *session) ensureFetched(ctx context.Context, uids []string) error {
	var errs []error
	for _, uid := range uids {
		s.mu.Lock()
		o := s.objs[uid]
		var r resource
		if o != nil {
			if w := s.watches[collector.Kind{Group: groupOf(o.APIVersion), Kind: o.Kind}.String()]; w != nil {
				r = w.res
			}
		}
		need := o != nil && s.fetched[uid] == nil && r.gvr.Resource != "" && s.needsFetchLocked(o)
		s.mu.Unlock()
		if !need {
			continue
		}
		u, err := s.dyn.Resource(r.gvr).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get %s: %w", o.ref(), err))
			continue
		}
		tf := transformer{norm: s.c.norm, apiVersion: r.gvr.GroupVersion().String(), kind: r.kind}
		if o.rolledUp {
			// Part of an owner no watch reads: read for that owner's
			// generic workload, as if it had no owner.
			u.SetOwnerReferences(nil)
		}
		full := tf.fromMap(u, u.Object)
		s.mu.Lock()
		s.fetched[uid] = full
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// visible reports whether a deletion of w could be seen: its kind is
// watched, listed and healthy, and its namespace's scope is known.
func (s *session) visible(w schemas.Workload) bool {
	label := collector.Kind{Group: groupOf(w.APIVersion), Kind: w.Kind}.String()
	if _, known := s.c.norm.KindOf(groupOf(w.APIVersion), w.Kind); !known {
		// A generic workload is seen through the pods it owns.
		label = collector.Kind{Kind: "Pod"}.String()
	}
	s.mu.Lock()
	kw := s.watches[label]
	s.mu.Unlock()
	if kw == nil || !kw.synced() || !s.c.health.ok(label) {
		return false
	}
	return s.scopeKnown()
}

// flushGone tombstones, as one guarded pass, the workloads seen deleted
// since the last one.
func (s *session) flushGone(ctx context.Context) {
	s.mu.Lock()
	var uids []string
	for uid := range s.gone {
		if o := s.objs[uid]; o == nil && s.generic[uid] == "" || o != nil && !s.topLevelLocked(o) {
			uids = append(uids, uid)
		} else {
			delete(s.gone, uid)
		}
	}
	s.mu.Unlock()
	if len(uids) == 0 {
		return
	}
	res, err := s.c.rec.Remove(ctx, uids, s.visible, time.Now())
	if err != nil {
		s.c.log.Warn("tombstones", zap.Error(err))
		return
	}
	if res.Held > 0 {
		return // the next pass confirms them, or not
	}
	s.mu.Lock()
	for _, uid := range uids {
		delete(s.gone, uid)
		delete(s.retained, uid)
		delete(s.skipLog, uid)
	}
	s.mu.Unlock()
	if res.Tombstones > 0 {
		s.c.log.Info("tombstones written", zap.Int("count", res.Tombstones))
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
		ns, name, ok := w.anyObject()
		if !ok {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		if w.res.namespaced {
			_, err = s.dyn.Resource(w.res.gvr).Namespace(ns).Get(pctx, name, metav1.GetOptions{})
		} else {
			_, err = s.dyn.Resource(w.res.gvr).Get(pctx, name, metav1.GetOptions{})
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if apierrors.IsNotFound(err) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("get %s %s/%s: %w", w.res.gvr.Resource, ns, name, err)
		}
		s.c.health.probe(w.res.label(), err)
	}
}

func groupOf(apiVersion string) string {
	g, _, ok := cutAPIVersion(apiVersion)
	if !ok {
		return ""
	}
	return g
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max)))
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
