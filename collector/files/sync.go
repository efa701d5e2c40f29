package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Publisher is what the manifest source needs of the stream; *stream.Bus
// satisfies it.
type Publisher interface {
	// PublishChange appends ev unless the workload's history already ends in
	// the same state; published says whether it did.
	PublishChange(ctx context.Context, ev schemas.WorkloadChange) (seq uint64, published bool, err error)
	// LatestChanges calls fn with the current state of every workload of cluster.
	LatestChanges(ctx context.Context, cluster string, fn func(ev schemas.WorkloadChange, seq uint64) error) error
	// AppendChanges appends many events, each expected to follow the
	// sequence its workload had when LatestChanges read it.
	AppendChanges(ctx context.Context, appends []stream.Append) []stream.AppendResult
}

// SyncResult counts what one pass did.
type SyncResult struct {
	Workloads  int // serving or not, every workload read
	Published  int // new events on CHANGES
	Tombstones int // workloads gone from the manifests
	Notes      int
}

// Sync publishes the events of loaded, then a tombstone for every workload
// that an earlier pass read from manifests (Inputs.Source "file:...") and that
// is no longer there. When some document could not be read (loaded.Err), no
// tombstone is written in that pass: a typo must never delete a workload's
// history. Nor is one written for a workload last read from a file that was
// skipped in part or whole for its size (loaded.Skipped): its state stays
// what it was until the file can be read again.
//
// It reads the cluster's current state once, up front: a workload whose last
// event already has the same type and input hash costs nothing more (in watch
// mode, nearly all of them), and the same read finds the workloads that are
// gone. Every publish still goes through PublishChange, whose conditional
// append is what keeps concurrent writers correct.
func Sync(ctx context.Context, p Publisher, cluster string, loaded Loaded, now time.Time) (SyncResult, error) {
	res := SyncResult{Workloads: len(loaded.Events), Notes: len(loaded.Notes)}
	var errs []error
	type state struct {
		ev  schemas.WorkloadChange
		seq uint64
	}
	last := map[string]state{}
	if err := p.LatestChanges(ctx, cluster, func(ev schemas.WorkloadChange, seq uint64) error {
		last[ev.Data.Workload.UID] = state{ev, seq}
		return nil
	}); err != nil {
		errs = append(errs, err) // what could be read is in last; the appends check the rest
	}
	present := make(map[string]bool, len(loaded.Events))
	var appends []stream.Append
	for _, ev := range loaded.Events {
		present[ev.Data.Workload.UID] = true
		prev, ok := last[ev.Data.Workload.UID]
		if ok && prev.ev.Type == ev.Type && prev.ev.Data.InputHash == ev.Data.InputHash {
			continue
		}
		appends = append(appends, stream.Append{Event: ev, LastSeq: prev.seq})
	}
	var failed []error
	for _, r := range p.AppendChanges(ctx, appends) {
		if r.Err != nil {
			failed = append(failed, r.Err)
		} else if r.Published {
			res.Published++
		}
	}
	if err := summarize(failed, len(appends)); err != nil {
		errs = append(errs, err)
	}
	if loaded.Err != nil {
		return res, errors.Join(append(errs, fmt.Errorf("tombstones skipped this pass: %w", loaded.Err))...)
	}
	var gone []schemas.Workload
	for uid, st := range last {
		ev := st.ev
		if !present[uid] && !ev.IsTombstone() && ev.Data.Inputs != nil && strings.HasPrefix(ev.Data.Inputs.Source, "file:") &&
			!loaded.unread[ev.Data.Inputs.Source] {
			gone = append(gone, ev.Data.Workload)
		}
	}
	slices.SortFunc(gone, func(a, b schemas.Workload) int { return strings.Compare(a.Key(), b.Key()) })
	for _, w := range gone {
		_, pub, err := p.PublishChange(ctx, schemas.NewDeleted(Source, now, w))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pub {
			res.Tombstones++
		}
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
	// OnSync, when set, is called after every pass that read the files.
	OnSync func(SyncResult, Loaded)
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
	res, err := Sync(ctx, w.Publisher, w.Cluster, loaded, time.Now())
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
			if err != nil {
				log.Warn("manifest sync incomplete", zap.String("dir", w.Dir), zap.Error(err))
			} else {
				last = fp
			}
			log.Info("manifests synced", zap.String("dir", w.Dir), zap.Int("workloads", res.Workloads),
				zap.Int("published", res.Published), zap.Int("tombstones", res.Tombstones))
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

// summarize makes one error of the failed publishes of a pass: all of them
// when they are few, else the count and the first three (a stopped process
// fails every publish of the pass with the same cause).
func summarize(failed []error, of int) error {
	if len(failed) <= 3 {
		return errors.Join(failed...)
	}
	return fmt.Errorf("%d of %d changes not published, first: %w", len(failed), of, errors.Join(failed[:3]...))
}
