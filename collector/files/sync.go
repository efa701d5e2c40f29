package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
)

// Publisher is what the manifest source needs of the change log; *changelog.Log
// satisfies it.
type Publisher = collector.Publisher

// SourceFor is the source instance of a manifest directory: the CloudEvents
// source of its events, and so the owner of its workloads. It is the
// directory as given, cleaned, so that a tree checked out afresh at the same
// place keeps its workloads, and two directories never tombstone each
// other's.
func SourceFor(dir string) string {
	return Source + "/" + strings.TrimPrefix(filepath.ToSlash(filepath.Clean(dir)), "/")
}

// SyncResult counts what one pass did.
type SyncResult struct {
	Workloads  int // serving or not, every workload read
	Published  int // new events on CHANGES
	Tombstones int // workloads gone from the manifests
	Held       int // tombstones held back by the reconciler's guard
	Notes      int
}

// Sync reads the cluster's state once (Reconciler.Load), publishes the events
// of loaded whose state changed, then tombstones the workloads this source
// owns that are no longer in the manifests (collector.Reconciler.Sync). When
// some document could not be read (loaded.Err), no tombstone is written in
// that pass: a typo must never delete a workload's history. Nor is one
// written for a workload last read from a file that was skipped in part or
// whole (loaded.Skipped).
func Sync(ctx context.Context, r *collector.Reconciler, loaded Loaded, now time.Time) (SyncResult, error) {
	res := SyncResult{Workloads: len(loaded.Events), Notes: len(loaded.Notes)}
	var errs []error
	from := map[string]string{} // uid -> Inputs.Source of its last event
	if err := r.Load(ctx, func(ev schemas.WorkloadChange) {
		if ev.Data.Inputs != nil {
			from[ev.Data.Workload.UID] = ev.Data.Inputs.Source
		}
	}); err != nil {
		errs = append(errs, err) // what could be read is loaded; the appends check the rest
	}
	// A workload last read from a file skipped this pass (too big, too many
	// documents) keeps its state until the file can be read again.
	visible := func(w schemas.Workload) bool { return loaded.Err == nil && !loaded.unread[from[w.UID]] }
	rr, err := r.Sync(ctx, loaded.Events, visible, now)
	res.Published, res.Tombstones, res.Held = rr.Published, rr.Tombstones, rr.Held
	errs = append(errs, err)
	if loaded.Err != nil {
		errs = append(errs, fmt.Errorf("tombstones skipped this pass: %w", loaded.Err))
	}
	return res, errors.Join(errs...)
}

// Watcher turns a directory of manifests into events, once or whenever its
// files change.
type Watcher struct {
	Dir        string
	Cluster    string
	Normalizer *collector.Normalizer
	Publisher  Publisher
	Limits     manifest.Limits // what one file may hold; zero: the defaults
	Interval   time.Duration   // how often to look for edits; default 2s
	Log        *zap.Logger
	// Source names this source instance (default SourceFor(Dir)).
	Source string
	// MaxTombstoneShare and ConfirmTombstones are the reconciler's guard
	// (collector.ReconcilerConfig).
	MaxTombstoneShare float64
	ConfirmTombstones bool
	// Registerer, when set, receives the reconciler's metrics.
	Registerer prometheus.Registerer
	// OnSync, when set, is called after every pass that read the files.
	OnSync func(SyncResult, Loaded)

	rec     *collector.Reconciler
	generic *prometheus.GaugeVec
}

func (w *Watcher) reconciler() (*collector.Reconciler, error) {
	if w.rec != nil {
		return w.rec, nil
	}
	src := w.Source
	if src == "" {
		src = SourceFor(w.Dir)
	}
	r, err := collector.NewReconciler(collector.ReconcilerConfig{
		Source: src, Cluster: w.Cluster, Claims: []string{Source},
		MaxTombstoneShare: w.MaxTombstoneShare, ConfirmTombstones: w.ConfirmTombstones,
	}, w.Publisher, w.Log, w.Registerer)
	if err != nil {
		return nil, err
	}
	w.generic = collector.NewGenericGauge()
	if w.Registerer != nil {
		if err := w.Registerer.Register(w.generic); err != nil {
			return nil, fmt.Errorf("manifest source metrics: %w", err)
		}
	}
	w.rec = r
	return r, nil
}

// Once reads the directory and syncs it. Every file skipped is logged as a
// warning.
func (w *Watcher) Once(ctx context.Context) (SyncResult, Loaded, error) {
	loaded := LoadWith(w.Dir, w.Dir, w.Normalizer, w.Limits)
	if w.Log != nil {
		for _, s := range loaded.Skipped {
			fields := []zap.Field{zap.String("file", s.File), zap.String("reason", s.Reason)}
			if s.Line > 0 {
				fields = append(fields, zap.Int("line", s.Line))
			}
			w.Log.Warn("manifest skipped", fields...)
		}
	}
	r, err := w.reconciler()
	if err != nil {
		return SyncResult{}, loaded, err
	}
	res, err := Sync(ctx, r, loaded, time.Now())
	collector.SetGeneric(w.generic, loaded.Events)
	if w.OnSync != nil {
		w.OnSync(res, loaded)
	}
	return res, loaded, err
}

// Run syncs at start and again whenever a file under Dir is added, edited or
// removed, until ctx is done. A failing pass is logged and retried at the next
// tick; it never ends the loop.
func (w *Watcher) Run(ctx context.Context) error {
	interval := w.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	log := w.Log
	if log == nil {
		log = zap.NewNop()
	}
	last := ""
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fp, err := fingerprint(w.Dir)
		switch {
		case err != nil:
			log.Warn("manifest directory unreadable", zap.String("dir", w.Dir), zap.Error(err))
		case fp != last:
			res, _, err := w.Once(ctx)
			switch {
			case err != nil:
				log.Warn("manifest sync incomplete", zap.String("dir", w.Dir), zap.Error(err))
			case res.Held > 0:
				// The guard waits for a second pass with the same result.
			default:
				last = fp
			}
			log.Info("manifests synced", zap.String("dir", w.Dir), zap.Int("workloads", res.Workloads),
				zap.Int("published", res.Published), zap.Int("tombstones", res.Tombstones), zap.Int("held", res.Held))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// fingerprint summarizes the names, sizes and modification times of the
// manifest files under dir, so an unchanged tree costs one walk and no parse.
func fingerprint(dir string) (string, error) {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s\x00%d\x00%d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return b.String(), nil
}
