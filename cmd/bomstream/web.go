package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/web"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream/ledger"
)

// defaultWebListen is where `bomstream web` serves when nothing says.
const defaultWebListen = "127.0.0.1:8080"

// webCmd serves the web inventory (and the API beside it) from the BOMS
// stream, read-only: the pages `run` and `sink` serve with --api-listen.
func webCmd(e *env) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "web [--api-listen 127.0.0.1:8080]",
		Short: "Serve the inventory as web pages: workloads, timelines, diffs, findings, fleet charts (read-only)",
		Example: `  bomstream web
  bomstream web --api-listen 127.0.0.1:9000
  bomstream web --nats-url nats://nats:4222 --api-listen :8080 --api-token-file token`,
		Long: `web loads the inventory from the BOMS stream (the local data directory,
through the running process when one holds it, or --nats-url) and serves it
as pages, beside the JSON API: the inventory with find's filters, each
workload's AI-BOM, timeline and version diffs, policy findings, and fleet
charts. Pages need no JavaScript and load nothing from elsewhere.

It listens on 127.0.0.1:8080 unless --api-listen says otherwise; beyond
loopback it needs --api-token-file (browsers sign in once, at /login) or
--api-client-ca.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			if cfg.API.Listen == "" {
				cfg.API.Listen = defaultWebListen
			}
			return withProcess(cmd, e, cfg, process.Parts{Attach: true, API: true}, func(ctx context.Context, _ *process.Pipeline) error {
				<-ctx.Done()
				return nil
			})
		},
	}
	c.bind(cmd.Flags())
	bindAPI(cmd)
	return cmd
}

// webAPIHook serves the pages beside the API (package inventory/web),
// with where the process's sinks hold each version.
func webAPIHook(ix *inventory.Index) apiHook {
	return func(ctx context.Context, s *api.Server, p *process.Pipeline) error {
		loc, err := locator(ctx, p)
		if err != nil {
			return err
		}
		_, err = web.Register(ctx, s, web.Sources{Index: ix, Store: p.Bus().Reader(), Findings: p.FindingsIndex, Locate: loc}, nil)
		return err
	}
}

// locator says where the configured sinks hold a version: each sink's
// Locate (sinks.Locator, from p.Locators), and its ledger for whether it
// wrote it.
func locator(ctx context.Context, p *process.Pipeline) (web.Locator, error) {
	locs, err := p.Locators(ctx)
	if err != nil {
		return nil, err
	}
	if len(locs) == 0 {
		return nil, nil
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
		ledgers, err := ledger.Names(ctx, p.Bus())
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
				a, ok, lerr = runner.LedgerEntry(ctx, p.Bus(), nl.Name, w)
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
