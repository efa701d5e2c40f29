package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
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
			return process(cmd, e, cfg, stages{transformer: true}, func(ctx context.Context, p *pipeline) error {
				return p.run(ctx)
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
			return process(cmd, e, cfg, stages{sinks: sel, dryRun: dryRun, findings: !dryRun, api: true}, func(ctx context.Context, p *pipeline) error {
				return p.run(ctx)
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
			return process(cmd, e, cfg, stages{sinks: []string{name}, dryRun: dryRun, attach: true}, func(ctx context.Context, p *pipeline) error {
				opts := runner.ReplayOptions{StartSeq: fromSeq, StartTime: start, IgnoreLedger: ignoreLedger}
				last := time.Time{}
				report := func(done, total uint64, rate float64) {
					if time.Since(last) < time.Second && done != total {
						return
					}
					last = time.Now()
					fmt.Fprintf(out, "replay %s: %d/%d messages, %.0f msg/s\n", name, done, total, rate)
				}
				var st runner.Stats
				var err error
				if p.bus.ViaOwner() {
					if dryRun {
						return errors.New("--dry-run: the data directory's owner runs the sink; stop it, or run the dry run elsewhere")
					}
					st, err = replayThroughOwner(ctx, p, replayRequest{Sink: name, StartSeq: fromSeq, StartTime: start, IgnoreLedger: ignoreLedger}, report)
				} else {
					st, err = p.sinks[0].runner.Replay(ctx, opts, report)
				}
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

// parseTime reads RFC 3339 (or a date), or a duration meaning that long ago.
func parseTime(s string) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339, a date, nor a duration", s)
}

// bindDryRun adds --dry-run: the sinks log what they would write and write
// nothing, under their own consumers and ledgers ("<name>-dryrun").
func bindDryRun(f *pflag.FlagSet, dryRun *bool) {
	f.BoolVar(dryRun, "dry-run", false, "sinks log what they would write and write nothing (own consumer and ledger: <name>-dryrun)")
}

// replayThroughOwner asks the process that owns the data directory to
// replay into its sink, and reports its progress.
func replayThroughOwner(ctx context.Context, p *pipeline, req replayRequest, report runner.Progress) (runner.Stats, error) {
	body, _ := json.Marshal(req)
	raw, err := p.bus.Control().Call(ctx, "replay", body, func(b []byte) {
		var pr replayProgress
		if json.Unmarshal(b, &pr) == nil {
			report(pr.Done, pr.Total, pr.Rate)
		}
	})
	var st runner.Stats
	if err != nil {
		return st, fmt.Errorf("replay through the process that owns the data directory: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("replay: %w", err)
	}
	return st, nil
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
			cfg = withDefaultSinks(cfg)
			if err := cfg.Validate(e.sinks); err != nil {
				return fmt.Errorf("invalid configuration:\n%w", err)
			}
			sel, err := selectSinks(cfg.Sinks, []string{args[0]})
			if err != nil {
				return err
			}
			sc := sel[0]
			scfg, err := e.sinks.Decode(sc.Type, sc.Config)
			if err != nil {
				return fmt.Errorf("sinks %s: %w", sc.Name, err)
			}
			ctx := cmd.Context()
			log := newLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(cmd.ErrOrStderr())))
			s, err := e.sinks.New(ctx, sc.Type, sc.Name, scfg, sinks.Deps{Log: log, Getenv: e.getenv, SpecVersion: sc.SpecVersion})
			if err != nil {
				return err
			}
			defer s.Close()
			checker, ok := s.(sinks.Checker)
			out := cmd.OutOrStdout()
			if !ok {
				fmt.Fprintf(out, "sink %s (%s) has no checks\n", sc.Name, sc.Type)
				return nil
			}
			cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			failed := 0
			for _, ch := range checker.Check(cctx) {
				if ch.Err != nil {
					failed++
					fmt.Fprintf(out, "FAIL  %s: %s\n", ch.Name, schemas.RedactText(ch.Err.Error()))
				} else {
					fmt.Fprintf(out, "ok    %s\n", ch.Name)
				}
			}
			if failed > 0 {
				return fmt.Errorf("sink %s: %d checks failed", sc.Name, failed)
			}
			return nil
		},
	}
	c.bind(cmd.Flags())
	return cmd
}
