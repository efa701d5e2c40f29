package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/transformer/rerender"
)

// The commands that look after the store: check and rerender (package
// process does the work).

// checkCmd verifies the store and, with --repair, repairs what can be
// derived again; docs/check.md says what that is.
func checkCmd(e *env) *cobra.Command {
	var (
		c      common
		repair bool
	)
	cmd := &cobra.Command{
		Use:   "check [--repair]",
		Short: "Verify the streams, consumers and sink ledgers; with --repair, rebuild what CHANGES can",
		Example: `  bomstream check
  bomstream check --repair
  bomstream check --nats-url nats://nats:4222`,
		Long: `check reads the store and holds its parts against each other: the sequences
CHANGES and BOMS lost, every handled change's outcome on BOMS, where the
consumers stand, and each sink's ledger. It prints what it found with the
workloads concerned and exits 1 when a problem remains.

With --repair it renders lost BOMs and tombstones again from CHANGES, resets
or re-creates consumers that would skip or repeat messages, then checks
again. What CHANGES itself lost cannot be rebuilt; see docs/check.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
			return withProcess(cmd, e, cfg, process.Parts{Transformer: true, Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				if repair && p.Bus().ViaOwner() {
					return errors.New("check --repair: a bomstream process owns the data directory and repairs what it finds when it starts; restart it, or stop it and repair by hand (check alone works while it runs)")
				}
				return process.Check(ctx, p, cmd.OutOrStdout(), repair)
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().BoolVar(&repair, "repair", false, "repair what can be derived again, then check again")
	return cmd
}

// rerenderCmd renders the current state of every workload again with this
// build's transformer and its rules, and appends a new change event where
// the BOM's content changes (package transformer/rerender). With an owner
// of the data directory the owner does it, with its transformer.
func rerenderCmd(e *env) *cobra.Command {
	var (
		c      common
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "rerender [--dry-run]",
		Short: "Render every workload's current state again; publish a new BOM version only where the content changes",
		Example: `  bomstream rerender --dry-run
  bomstream rerender
  bomstream rerender --nats-url nats://nats:4222`,
		Long: `rerender renders the last change of every workload with the current
transformer and rules, compares the content with the workload's current BOM
(bomstream's own version in metadata.tools and the serial number are not
content), and appends a copy of the change event where it differs: the
pipeline then makes one new version of each such workload, which the sinks
export once. The process that runs the transformer does this by itself when
it starts with new rules or a new version. --dry-run lists what would change
and publishes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return withProcess(cmd, e, cfg, process.Parts{Transformer: true, Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				rep, err := process.Rerender(ctx, p, dryRun)
				printRerender(out, rep, dryRun)
				if err == nil && !dryRun && p.Bus().Embedded() && !p.Bus().ViaOwner() && len(rep.Changes) > 0 {
					fmt.Fprintln(out, "rerender: no process runs the transformer on this store; the next run renders the new events")
				}
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the workloads whose BOM would change and publish nothing")
	return cmd
}

// printRerender prints a line per workload that changes, then a summary.
func printRerender(out io.Writer, rep rerender.Report, dryRun bool) {
	verb := "new version"
	if dryRun {
		verb = "would change"
	}
	for _, c := range rep.Changes {
		fmt.Fprintf(out, "%s\t%s\t%s\n", c.Workload, verb, c.What)
	}
	fmt.Fprintf(out, "rerender: %d workloads, %d changed, %d unchanged, %d not rendered yet, %d failed%s\n",
		rep.Workloads, len(rep.Changes), rep.Workloads-len(rep.Changes)-rep.Pending-rep.Failed, rep.Pending, rep.Failed, map[bool]string{true: " (dry run: nothing published)"}[dryRun])
}
