package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/process"
)

// transformerCmd runs only the transformer stage, typically as one of several
// replicas against an external NATS.
func transformerCmd(e *env) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "transformer",
		Short: "Run the transformer stage: render CHANGES into BOMS",
		Example: `  bomstream transformer --nats-url nats://nats:4222
  bomstream transformer --nats-url nats://nats:4222 --nats-creds bomstream.creds
  bomstream transformer --config /etc/bomstream/config.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			return withProcess(cmd, e, cfg, process.Parts{Transformer: true}, func(ctx context.Context, p *process.Pipeline) error {
				return p.Run(ctx)
			})
		},
	}
	c.bind(cmd.Flags())
	return cmd
}

// sinkCmd runs sink stages: the named ones, or every configured sink.
func sinkCmd(e *env) *cobra.Command {
	var (
		c      common
		names  []string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "sink [--name NAME]...",
		Short: "Run sink stages: export BOMS to the configured sinks",
		Example: `  bomstream sink --nats-url nats://nats:4222
  bomstream sink --name gcs --name dtrack
  bomstream sink --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			sel := names
			if len(sel) == 0 {
				sel = []string{"*"}
			}
			return withProcess(cmd, e, cfg, process.Parts{Sinks: sel, DryRun: dryRun, Findings: !dryRun, API: true}, func(ctx context.Context, p *process.Pipeline) error {
				return p.Run(ctx)
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().StringSliceVar(&names, "name", nil, "sink to run (repeatable); default all configured sinks")
	bindDryRun(cmd.Flags(), &dryRun)
	bindAPI(cmd)
	cmd.AddCommand(sinkCheckCmd(e))
	return cmd
}

// replayCmd re-drives one sink over the BOMS stream. The sink's ledger makes
// it idempotent: what was exported before is not written again.
func replayCmd(e *env) *cobra.Command {
	var (
		c            common
		name         string
		since        string
		fromSeq      uint64
		ignoreLedger bool
		dryRun       bool
	)
	cmd := &cobra.Command{
		Use:   "replay --sink NAME [--since TIME | --from-seq N]",
		Short: "Backfill one sink by replaying the BOMS stream",
		Example: `  bomstream replay --sink gcs --since 24h
  bomstream replay --sink dtrack --from-seq 1
  bomstream replay --sink gcs --ignore-ledger`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			var start time.Time
			if since != "" {
				if start, err = parseTime(since); err != nil {
					return fmt.Errorf("--since: %w", err)
				}
			}
			if !start.IsZero() && fromSeq != 0 {
				return fmt.Errorf("--since and --from-seq: give at most one")
			}
			out := cmd.OutOrStdout()
			return withProcess(cmd, e, cfg, process.Parts{Sinks: []string{name}, DryRun: dryRun, Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				last := time.Time{}
				report := func(done, total uint64, rate float64) {
					if time.Since(last) < time.Second && done != total {
						return
					}
					last = time.Now()
					fmt.Fprintf(out, "replay %s: %d/%d messages, %.0f msg/s\n", name, done, total, rate)
				}
				if p.Bus().ViaOwner() && dryRun {
					return errors.New("--dry-run: the data directory's owner runs the sink; stop it, or run the dry run elsewhere")
				}
				st, err := process.Replay(ctx, p, process.ReplayRequest{Sink: name, StartSeq: fromSeq, StartTime: start, IgnoreLedger: ignoreLedger}, report)
				fmt.Fprintf(out, "replay %s: %d exported, %d tombstones, %d already exported, %d superseded, %d dead-lettered\n",
					name, st.Exported, st.Tombstones, st.SkippedDuplicate, st.SkippedSuperseded, st.DeadLettered)
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&name, "sink", "", "name of the configured sink to replay into (required)")
	f.StringVar(&since, "since", "", "replay BOMs published at or after TIME (RFC 3339, or a duration ago such as 24h)")
	f.Uint64Var(&fromSeq, "from-seq", 0, "replay from this BOMS stream sequence")
	f.BoolVar(&ignoreLedger, "ignore-ledger", false, "export every version again whatever the sink's ledger says, to rebuild a store that was wiped")
	bindDryRun(f, &dryRun)
	_ = cmd.MarkFlagRequired("sink")
	return cmd
}

// parseTime reads --since and --at as inventory.ParseTime does, naming
// the text it could not read.
func parseTime(s string) (time.Time, error) {
	t, err := inventory.ParseTime(s, time.Now())
	if err != nil {
		return t, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}

// bindDryRun adds --dry-run: the sinks log what they would write and write
// nothing, under their own consumers and ledgers ("<name>-dryrun").
func bindDryRun(f *pflag.FlagSet, dryRun *bool) {
	f.BoolVar(dryRun, "dry-run", false, "sinks log what they would write and write nothing (own consumer and ledger: <name>-dryrun)")
}

// sinkCheckCmd runs a sink's preflight checks once and prints them: can it
// reach its store, does it hold the permissions it needs. It opens no
// stream and touches no data directory.
func sinkCheckCmd(e *env) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "check NAME",
		Short: "Check once that a configured sink can reach its store with the permissions it needs",
		Example: `  bomstream sink check gcs
  bomstream sink check dtrack --config /etc/bomstream/config.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			return process.CheckSink(cmd.Context(), processEnv(cmd, e), cfg, args[0], cmd.OutOrStdout())
		},
	}
	c.bind(cmd.Flags())
	return cmd
}
