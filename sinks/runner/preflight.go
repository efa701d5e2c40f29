package runner

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream/engine"
)

// Preflight: a sink that implements sinks.Checker is checked when its
// runner starts, and again every PreflightInterval until every check passes;
// the failures are in the log and make the stage degraded in Health, but
// the runner consumes all along (its retries hold what cannot be written
// yet): a store that comes up late is not a reason to exit.

// PreflightInterval is how often failing checks are run again.
const PreflightInterval = 30 * time.Second

type preflight struct {
	mu      sync.Mutex
	failing string // the failed checks, "" when all pass or none ran
}

func (p *preflight) set(s string) {
	p.mu.Lock()
	p.failing = s
	p.mu.Unlock()
}

func (p *preflight) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failing
}

// Check runs the sink's checks once; nil when the sink has none.
func (r *Runner) Check(ctx context.Context) []sinks.Check {
	c, ok := r.sink.(sinks.Checker)
	if !ok {
		return nil
	}
	return c.Check(ctx)
}

// runPreflight checks the sink until all checks pass or ctx is done.
func (r *Runner) runPreflight(ctx context.Context) {
	if _, ok := r.sink.(sinks.Checker); !ok {
		return
	}
	last := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		checks := r.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var failed []string
		for _, c := range checks {
			if c.Err != nil {
				failed = append(failed, c.Name+": "+c.Err.Error())
			}
		}
		summary := schemas.RedactText(strings.Join(failed, "; "))
		r.pre.set(summary)
		switch {
		case summary == "":
			r.log.Info("preflight passed", zap.Int("checks", len(checks)))
			return
		case summary != last:
			r.log.Warn("preflight failed; the sink keeps retrying", zap.String("failed", summary), zap.Duration("next check in", PreflightInterval))
		}
		last = summary
		t := time.NewTimer(PreflightInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// health is the engine's health, made degraded by failing preflight checks.
func (r *Runner) health() engine.Health {
	h := r.eng.Health()
	if f := r.pre.get(); f != "" && h.State == engine.StateUp {
		h.State, h.Reason = engine.StateDegraded, "preflight: "+f
	}
	return h
}
