package process

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/inventory/web"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream/ledger"
)

// ServeAPI serves the inventory API that cfg configures, with the findings
// API and the web pages beside it, until ctx ends; stop waits for the end.
// It loads the inventory index from BOMS, then two follow.Followers keep
// it and the findings index (p.FindingsIndex) current. The bound address
// goes to addr when it is not nil (tests).
func ServeAPI(ctx context.Context, cfg api.Config, p *Pipeline, addr chan<- string, log *zap.Logger) (stop func() error, err error) {
	ln, err := api.Listen(cfg)
	if err != nil {
		return nil, err
	}
	ix := inventory.New()
	start := time.Now()
	if _, err := ix.Load(ctx, p.bus.Reader()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("inventory api: %w", err)
	}
	log = log.With(zap.String("stage", "api"))
	log.Info("inventory loaded", zap.Int("workloads", ix.Stats().Workloads), zap.Duration("took", time.Since(start)))
	p.FindingsIndex = stored.NewIndex()
	go follow.New(p.bus.Reader(), schemas.StreamFindings, p.FindingsIndex).Run(ctx, func(err error) { log.Warn("findings not current", zap.Error(err)) })
	srv, err := api.New(cfg, ix, p.bus.Reader())
	if err == nil {
		serveFindings(srv, p)
		err = servePages(ctx, srv, p, ix)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("inventory api: %w", err)
	}
	done := make(chan error, 1)
	go follow.New(p.bus.Reader(), schemas.StreamBOMs, ix).Run(ctx, func(err error) { log.Warn("inventory not current", zap.Error(err)) })
	go func() { done <- srv.Serve(ctx, ln) }()
	log.Info("inventory api listening", zap.String("addr", ln.Addr().String()))
	if addr != nil {
		addr <- ln.Addr().String()
	}
	return func() error { return <-done }, nil
}

// serveFindings serves /api/v1/findings beside the workloads, under the
// same token check: the current state of every finding, filtered and
// paged (stored.Handler), from the findings index once it has read
// FINDINGS; and the workloads' findings=true filter (find --findings
// through the API).
func serveFindings(s *api.Server, p *Pipeline) {
	s.Handle("GET /api/v1/findings", stored.Handler(p.bus.Reader(), p.FindingsIndex))
	s.FilterFindings(apiFindings{p.FindingsIndex, p.bus.Reader()})
}

// apiFindings answers the API's findings filter: which workloads have
// open findings from the index, their events from FINDINGS.
type apiFindings struct {
	*stored.Index
	store stored.Store
}

func (a apiFindings) Open(ctx context.Context, ws []schemas.Workload) ([][]schemas.FindingEvent, error) {
	wfs, err := stored.OpenFor(ctx, a.store, ws)
	out := make([][]schemas.FindingEvent, len(wfs))
	for i, wf := range wfs {
		out[i] = wf.Findings
	}
	return out, err
}

// servePages serves the web pages beside the API (package inventory/web),
// with where the process's sinks hold each version.
func servePages(ctx context.Context, s *api.Server, p *Pipeline, ix *inventory.Index) error {
	loc, err := locator(ctx, p)
	if err != nil {
		return err
	}
	_, err = web.Register(ctx, s, web.Sources{Index: ix, Store: p.bus.Reader(), Findings: p.FindingsIndex, Locate: loc}, nil)
	return err
}

// locator says where the configured sinks hold a version: each sink's
// Locate (sinks.Locator, from Locators), and its ledger for whether it
// wrote it.
func locator(ctx context.Context, p *Pipeline) (web.Locator, error) {
	locs, err := p.Locators(ctx)
	if err != nil || len(locs) == 0 {
		return nil, err
	}
	return func(ctx context.Context, w schemas.Workload, v inventory.Version, latest bool) ([]web.Located, error) {
		sv := sinks.Version{Workload: w, BomHash: v.BomHash, ChangeSeq: v.ChangeSeq, Latest: latest}
		for _, im := range v.Images {
			for _, d := range im.Digests {
				sv.Images = append(sv.Images, schemas.ImageDigest{Image: im.Ref, Digest: d})
			}
		}
		var out []web.Located
		var errs []error
		// A sink that never ran has no ledger: look first, for opening one
		// would create it, and the pages only read.
		ledgers, err := ledger.Names(ctx, p.bus)
		if err != nil {
			errs = append(errs, err)
		}
		for _, nl := range locs {
			where := nl.Locator.Locate(sv)
			if len(where) == 0 {
				continue
			}
			applied := "not yet exported"
			var (
				a    runner.Applied
				ok   bool
				lerr error
			)
			if slices.Contains(ledgers, nl.Name) {
				a, ok, lerr = runner.LedgerEntry(ctx, p.bus, nl.Name, w)
			}
			switch {
			case lerr != nil:
				errs = append(errs, fmt.Errorf("sink %s: %w", nl.Name, lerr))
			case ok && a.ChangeSeq >= v.ChangeSeq:
				applied = "exported"
			}
			for _, l := range where {
				out = append(out, web.Located{Location: l, Applied: applied})
			}
		}
		return out, errors.Join(errs...)
	}, nil
}
