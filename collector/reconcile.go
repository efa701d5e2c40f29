package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/changelog"
)

// Publisher is what a source needs of the change log; *changelog.Log
// satisfies it.
type Publisher interface {
	// PublishChange appends ev to its workload's history unless that history
	// already ends in the same state (same type and input hash); published
	// says whether it did, seq is the workload's last sequence after the
	// call. It blocks until the stream acknowledged, is safe for concurrent
	// use, and idempotent: a retry of the same decision is dropped.
	PublishChange(ctx context.Context, ev schemas.WorkloadChange) (seq uint64, published bool, err error)
	// LatestChanges calls fn with the last event of every workload of
	// cluster, in no particular order. An error from fn stops it.
	LatestChanges(ctx context.Context, cluster string, fn func(ev schemas.WorkloadChange, seq uint64) error) error
	// AppendChanges appends many events at once, each expected to follow the
	// sequence its workload had when LatestChanges read it; an expectation
	// that turned stale is decided again the way PublishChange decides.
	AppendChanges(ctx context.Context, appends []changelog.Append) []changelog.AppendResult
}

// ReconcilerConfig configures a Reconciler.
type ReconcilerConfig struct {
	// Source names the source instance: the CloudEvents source of every
	// event it writes. A workload belongs to the source named by its last
	// event, and a source tombstones only what it owns: two manifest
	// directories, or a directory and a cluster, never delete each other's
	// workloads. Required.
	Source string
	// Cluster is the cluster whose workloads are reconciled. Required.
	Cluster string
	// Claims are earlier names of this source: workloads whose last event
	// carries one are owned too (the manifest source was "bomstream/manifests"
	// for every directory before sources had instances).
	Claims []string
	// MaxTombstoneShare is the largest share of the source's live workloads
	// one pass may tombstone without confirmation (default 0.5). A pass that
	// would tombstone more is held, with a warning and the metric
	// bomstream_tombstones_held, until the next pass finds exactly the same
	// workloads gone, or ConfirmTombstones is set. 1 or more disables the
	// guard.
	MaxTombstoneShare float64
	// ConfirmTombstones lets a pass tombstone any share.
	ConfirmTombstones bool
	// Concurrency bounds the publishes one Sync has in flight (default 16).
	Concurrency int
}

func (c ReconcilerConfig) withDefaults() ReconcilerConfig {
	if c.MaxTombstoneShare == 0 {
		c.MaxTombstoneShare = 0.5
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	return c
}

// Validate names the first invalid field.
func (c ReconcilerConfig) Validate() error {
	switch {
	case c.Source == "":
		return fmt.Errorf("reconciler: source: empty")
	case !idLike(c.Cluster):
		return fmt.Errorf("reconciler: cluster: %q must match ^[A-Za-z0-9_-]+$", c.Cluster)
	case c.MaxTombstoneShare < 0:
		return fmt.Errorf("reconciler: maxTombstoneShare: negative")
	}
	return nil
}

// SyncResult counts what one pass did.
type SyncResult struct {
	Workloads  int // desired workloads, serving or not
	Published  int // new events on CHANGES
	Tombstones int // tombstones written
	Held       int // tombstones held by the guard, waiting for confirmation
}

// Reconciler moves a source's desired state onto CHANGES: it publishes an
// event only when a workload's state (type and input hash) differs from the
// last one on the stream, and tombstones the workloads the source owns that
// are gone. It keeps the last state of every workload of the cluster in
// memory: Load reads it from the stream, and every publish updates it, so a
// long-running source pays one stream read at start. It is safe for
// concurrent use.
type Reconciler struct {
	cfg  ReconcilerConfig
	pub  Publisher
	log  *zap.Logger
	held prometheus.Gauge

	mu    sync.Mutex
	state map[string]lastState // uid -> last event on CHANGES
	wait  map[string]bool      // uids of the tombstones held by the last pass
}

type lastState struct {
	w         schemas.Workload
	typ, hash string
	source    string
	seq       uint64 // of the event on CHANGES
}

// NewReconciler validates cfg. reg may be nil (no metrics registered).
func NewReconciler(cfg ReconcilerConfig, p Publisher, log *zap.Logger, reg prometheus.Registerer) (*Reconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	r := &Reconciler{
		cfg: cfg.withDefaults(), pub: p, log: log, state: map[string]lastState{},
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bomstream_tombstones_held",
			Help: "Tombstones the last pass held back because they exceeded the share a pass may delete; they wait for confirmation.",
		}),
	}
	if reg != nil {
		if err := reg.Register(r.held); err != nil {
			return nil, fmt.Errorf("reconciler metrics: %w", err)
		}
	}
	return r, nil
}

func (r *Reconciler) owns(source string) bool {
	return source == r.cfg.Source || slices.Contains(r.cfg.Claims, source)
}

// Source is the source instance this reconciler writes as.
func (r *Reconciler) Source() string { return r.cfg.Source }

// Load reads the last event of every workload of the cluster from the stream
// and replaces the state in memory with it. each, when set, sees every event
// (a source may seed caches from them). What could be read is kept even when
// an error is returned.
func (r *Reconciler) Load(ctx context.Context, each func(schemas.WorkloadChange)) error {
	state := map[string]lastState{}
	err := r.pub.LatestChanges(ctx, r.cfg.Cluster, func(ev schemas.WorkloadChange, seq uint64) error {
		state[ev.Data.Workload.UID] = lastState{w: ev.Data.Workload, typ: ev.Type, hash: ev.Data.InputHash, source: ev.Source, seq: seq}
		if each != nil {
			each(ev)
		}
		return nil
	})
	r.mu.Lock()
	r.state = state
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("reconcile %s: load state: %w", r.cfg.Source, err)
	}
	return nil
}

// Owned returns the identities of the live (not tombstoned) workloads whose
// last event this source wrote.
func (r *Reconciler) Owned() []schemas.Workload {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []schemas.Workload
	for _, s := range r.state {
		if r.owns(s.source) && s.typ != schemas.TypeDeleted {
			out = append(out, s.w)
		}
	}
	return out
}

// Observe publishes ev (with Source set to this source) unless the last
// known state of its workload is the same. It blocks until published.
func (r *Reconciler) Observe(ctx context.Context, ev schemas.WorkloadChange) (bool, error) {
	ev.Source = r.cfg.Source
	uid := ev.Data.Workload.UID
	r.mu.Lock()
	s, ok := r.state[uid]
	r.mu.Unlock()
	if ok && s.typ == ev.Type && s.hash == ev.Data.InputHash {
		return false, nil // the same state, whoever wrote it: the stream would not take it either
	}
	if err := ev.Data.Workload.Validate(); err != nil {
		return false, fmt.Errorf("reconcile %s: %w", r.cfg.Source, err)
	}
	seq, pub, err := r.pub.PublishChange(ctx, ev)
	if err != nil {
		return false, err
	}
	r.record(ev, s.source, seq, pub)
	return pub, nil
}

// record updates the state in memory after ev was published (pub) or found
// there already, as the stream's sequence seq; prevSource is the source of
// the state it replaces, as read before the publish. A state found there
// already was written by whoever wrote it: prevSource, unless another
// decision of this reconciler recorded that very state meanwhile (a pass
// and a worker deciding the same workload at once), whose source stands.
func (r *Reconciler) record(ev schemas.WorkloadChange, prevSource string, seq uint64, pub bool) {
	uid := ev.Data.Workload.UID
	source := prevSource
	if pub {
		source = ev.Source
	}
	r.mu.Lock()
	if cur, ok := r.state[uid]; !pub && ok && cur.typ == ev.Type && cur.hash == ev.Data.InputHash {
		source = cur.source
	}
	r.state[uid] = lastState{w: ev.Data.Workload, typ: ev.Type, hash: ev.Data.InputHash, source: source, seq: seq}
	r.mu.Unlock()
}

// Sync publishes every desired event that differs from the state in memory
// (call Load first), then tombstones the owned workloads that are not
// desired, except those visible reports it cannot see (nil means every
// workload is visible): lost visibility is not deletion. Tombstones go
// through the guard described at ReconcilerConfig.MaxTombstoneShare.
func (r *Reconciler) Sync(ctx context.Context, desired []schemas.WorkloadChange, visible func(schemas.Workload) bool, now time.Time) (SyncResult, error) {
	res := SyncResult{Workloads: len(desired)}
	var errs []error
	present := make(map[string]bool, len(desired))
	// One conditional append per changed workload, expected to follow the
	// sequence Load read, sent without a round trip each.
	var appends []changelog.Append
	var prev []string
	for _, ev := range desired {
		ev.Source = r.cfg.Source
		uid := ev.Data.Workload.UID
		present[uid] = true
		r.mu.Lock()
		s, ok := r.state[uid]
		r.mu.Unlock()
		if ok && s.typ == ev.Type && s.hash == ev.Data.InputHash {
			continue // the same state, whoever wrote it
		}
		if err := ev.Data.Workload.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", r.cfg.Source, err))
			continue
		}
		appends = append(appends, changelog.Append{Event: ev, LastSeq: s.seq})
		prev = append(prev, s.source)
	}
	var failed []error
	for i, ar := range r.pub.AppendChanges(ctx, appends) {
		if ar.Err != nil {
			failed = append(failed, ar.Err)
			continue
		}
		r.record(appends[i].Event, prev[i], ar.Seq, ar.Published)
		if ar.Published {
			res.Published++
		}
	}
	if err := summarize(failed, len(appends)); err != nil {
		errs = append(errs, err)
	}
	var gone []string
	for _, w := range r.Owned() {
		if !present[w.UID] {
			gone = append(gone, w.UID)
		}
	}
	tres, err := r.Remove(ctx, gone, visible, now)
	res.Tombstones, res.Held = tres.Tombstones, tres.Held
	return res, errors.Join(append(errs, err)...)
}

// Remove tombstones the workloads of the given uids that this source owns,
// that are live, and that visible (nil: all) can see, as one pass: when they
// are more than MaxTombstoneShare of the source's live workloads, it holds
// them (Held) unless the previous pass held exactly the same set, or
// ConfirmTombstones is set.
func (r *Reconciler) Remove(ctx context.Context, uids []string, visible func(schemas.Workload) bool, now time.Time) (SyncResult, error) {
	r.mu.Lock()
	live := 0
	for _, s := range r.state {
		if r.owns(s.source) && s.typ != schemas.TypeDeleted {
			live++
		}
	}
	var gone []schemas.Workload
	set := map[string]bool{}
	for _, uid := range uids {
		s, ok := r.state[uid]
		if ok && r.owns(s.source) && s.typ != schemas.TypeDeleted && !set[uid] && (visible == nil || visible(s.w)) {
			gone = append(gone, s.w)
			set[uid] = true
		}
	}
	prev := r.wait
	r.wait = nil
	r.mu.Unlock()

	var res SyncResult
	if len(gone) == 0 {
		r.held.Set(0)
		return res, nil
	}
	slices.SortFunc(gone, func(a, b schemas.Workload) int { return strings.Compare(a.Key(), b.Key()) })
	if !r.cfg.ConfirmTombstones && r.cfg.MaxTombstoneShare < 1 &&
		float64(len(gone)) > r.cfg.MaxTombstoneShare*float64(live) && !sameSet(prev, set) {
		r.mu.Lock()
		r.wait = set
		r.mu.Unlock()
		r.held.Set(float64(len(gone)))
		res.Held = len(gone)
		r.log.Warn("tombstones held: this pass would delete more than the allowed share of the source's workloads; "+
			"they are written when the next pass finds the same workloads gone, or when confirmed",
			zap.String("source", r.cfg.Source), zap.Int("gone", len(gone)), zap.Int("live", live),
			zap.Float64("maxShare", r.cfg.MaxTombstoneShare), zap.String("first", gone[0].String()))
		return res, nil
	}
	r.held.Set(0)
	var errs []error
	for _, w := range gone {
		if err := w.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: tombstone: %w", r.cfg.Source, err))
			continue
		}
		_, pub, err := r.pub.PublishChange(ctx, schemas.NewDeleted(r.cfg.Source, now, w))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.mu.Lock()
		r.state[w.UID] = lastState{w: w, typ: schemas.TypeDeleted, source: r.cfg.Source}
		r.mu.Unlock()
		if pub {
			res.Tombstones++
		}
	}
	return res, errors.Join(errs...)
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k := range b {
		if !a[k] {
			return false
		}
	}
	return true
}

// summarize makes one error of the failed publishes of a pass: all of them
// when they are few, else the count and the first three (a stopped process
// fails every publish of the pass with the same cause).
func summarize(failed []error, of int) error {
	if len(failed) <= 3 {
		return errors.Join(failed...)
	}
	return fmt.Errorf("%d of %d changes not published, first: %w", len(failed), of, errors.Join(failed[:3]...))
}
