package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/process"
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
