package dtrack

import (
	"context"
	"fmt"
	"net/http"

	dtrack "github.com/DependencyTrack/client-go"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/sinks"
)

// Tombstone implements sinks.Sink: it deactivates the workload's project,
// deletes it, or keeps it, as OnTombstone says. A workload without a project
// has nothing to do, and a stale tombstone (a newer version of the name was
// exported: a workload re-created under its old name) is ignored.
func (s *Sink) Tombstone(ctx context.Context, ts sinks.Tombstone) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", ts.Workload, err)
	}
	t, err := s.target(ts.Workload)
	if err != nil {
		return err
	}
	if ts.Stale && s.byName {
		s.log.Info("stale tombstone ignored: a newer version of this name was exported",
			zap.Stringer("workload", ts.Workload), zap.Uint64("changeSeq", ts.ChangeSeq))
		return nil
	}
	if s.cfg.OnTombstone == TombstoneKeep {
		s.log.Debug("tombstone kept as configured", zap.Stringer("workload", ts.Workload), zap.String("reason", ts.Reason))
		return nil
	}
	c, err := s.client(ctx)
	if err != nil {
		return fmt.Errorf("tombstone %s: %w", ts.Workload, err)
	}
	mu := s.lock(t)
	mu.Lock()
	defer mu.Unlock()
	if err := s.tombstone(ctx, c, t, ts); err != nil {
		return fmt.Errorf("tombstone %s (%s) on %s: %w", ts.Workload, ts.Reason, t, err)
	}
	return nil
}

func (s *Sink) tombstone(ctx context.Context, c *dtrack.Client, t target, ts sinks.Tombstone) error {
	p, found, err := s.lookup(ctx, c, t.name, t.version)
	if err != nil {
		return err
	}
	if !found {
		s.setState(t, projectState{})
		return nil
	}
	switch s.cfg.OnTombstone {
	case TombstoneDelete:
		err := c.Project.Delete(ctx, p.UUID)
		if code, _ := apiStatus(err); code == http.StatusNotFound {
			err = nil
		}
		if err != nil {
			return classify(err, fmt.Sprintf("delete project %s", p.UUID), PermPortfolioManagement)
		}
		s.log.Info("project deleted", zap.Stringer("workload", ts.Workload), zap.String("reason", ts.Reason), zap.String("project", p.UUID.String()))
	default:
		if !p.Active {
			break
		}
		if err := s.patch(ctx, c, p, false); err != nil {
			return err
		}
		s.log.Info("project deactivated", zap.Stringer("workload", ts.Workload), zap.String("reason", ts.Reason), zap.String("project", p.UUID.String()))
	}
	s.setState(t, projectState{})
	if s.cfg.hierarchy() {
		return s.retireParents(ctx, t)
	}
	return nil
}
