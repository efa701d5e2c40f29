package sinks

import (
	"context"

	"go.uber.org/zap"
)

// DryRun wraps s so that nothing is written: Export and Tombstone log what
// would have been written and return nil. The wrapper is named
// "<name>-dryrun", so a runner gives it its own consumer and ledger and a dry
// run never marks a BOM as exported for the real sink. When s is a
// Locator, so is the wrapper: its locations are those of s, each with a
// Note saying that the dry run writes nothing there.
func DryRun(s Sink, log *zap.Logger) Sink {
	if log == nil {
		log = zap.NewNop()
	}
	name := s.Name() + "-dryrun"
	d := &dryRun{inner: s, name: name, log: log.With(zap.String("sink", name))}
	if l, ok := s.(Locator); ok {
		return locatingDryRun{dryRun: d, l: l}
	}
	return d
}

type dryRun struct {
	inner Sink
	name  string
	log   *zap.Logger
}

func (d *dryRun) Name() string { return d.name }

func (d *dryRun) Export(ctx context.Context, b BOM) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.log.Info("dry run: would export",
		zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash),
		zap.Uint64("changeSeq", b.ChangeSeq), zap.Int("bytes", len(b.Body)), zap.Bool("superseded", b.Superseded))
	return nil
}

func (d *dryRun) Tombstone(ctx context.Context, t Tombstone) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.log.Info("dry run: would tombstone",
		zap.Stringer("workload", t.Workload), zap.Uint64("changeSeq", t.ChangeSeq), zap.Bool("stale", t.Stale))
	return nil
}

func (d *dryRun) Close() error { return d.inner.Close() }

type locatingDryRun struct {
	*dryRun
	l Locator
}

func (d locatingDryRun) Locate(v Version) []Location {
	locs := d.l.Locate(v)
	for i := range locs {
		note := "dry run: " + d.name + " writes nothing; " + d.inner.Name() + " writes here"
		if locs[i].Note != "" {
			note = locs[i].Note + "; " + note
		}
		locs[i].Note = note
	}
	return locs
}
