package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

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

// groupOf is the group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	g, _, ok := cutAPIVersion(apiVersion)
	if !ok {
		return ""
	}
	return g
}

// compareStrings orders strings, for slices.SortFunc.
func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jitter is a random duration below max (0 when max is not positive).
func jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max)))
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
