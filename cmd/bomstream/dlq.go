package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// dlqCmd is the dead-letter workflow: list, show and retry what a stage
// gave up on.
func dlqCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, show and retry what the stages gave up on (the dead-letter stream)",
		Example: `  bomstream dlq list
  bomstream dlq show 42
  bomstream dlq retry --sink gcs`,
	}
	cmd.AddCommand(dlqListCmd(e), dlqShowCmd(e), dlqRetryCmd(e))
	return cmd
}

// stageOf turns --sink NAME / --stage STAGE into a dead-letter stage.
func stageOf(sink, stage string) string {
	if sink != "" {
		return schemas.SinkStage(sink)
	}
	return stage
}

func dlqListCmd(e *env) *cobra.Command {
	var (
		c           common
		sink, stage string
	)
	cmd := &cobra.Command{
		Use:   "list [--sink NAME | --stage STAGE]",
		Short: "List dead letters: id, when, which stage, which workload, why",
		Example: `  bomstream dlq list
  bomstream dlq list --sink gcs
  bomstream dlq list --stage transformer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sink != "" && stage != "" {
				return errors.New("--sink and --stage: give at most one")
			}
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
			return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tDEAD-LETTERED\tSTAGE\tWORKLOAD\tCHANGE\tREASON")
				n := 0
				err := deadletter.New(p.Bus()).List(ctx, stageOf(sink, stage), func(d deadletter.Letter) error {
					n++
					w, change := process.DeadLetterSubject(d)
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", d.ID, report.Stamp(d.Time), d.Stage, w, change, process.OneLine(d.Reason, 160))
					return nil
				})
				_ = tw.Flush()
				fmt.Fprintf(cmd.OutOrStdout(), "\n%d dead letters\n", n)
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().StringVar(&sink, "sink", "", "only this sink's dead letters")
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage's dead letters (transformer, sink.NAME)")
	return cmd
}

func dlqShowCmd(e *env) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print one dead letter: where it came from, why, its headers and its message",
		Example: `  bomstream dlq show 42
  bomstream dlq show 42 --nats-url nats://nats:4222`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("dead letter id %q: want a number from `bomstream dlq list`", args[0])
			}
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
			return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				d, err := deadletter.New(p.Bus()).Get(ctx, id)
				if err != nil {
					return err
				}
				process.WriteDeadLetter(cmd.OutOrStdout(), d)
				return nil
			})
		},
	}
	c.bind(cmd.Flags())
	return cmd
}

func dlqRetryCmd(e *env) *cobra.Command {
	var (
		c           common
		sink, stage string
	)
	cmd := &cobra.Command{
		Use:   "retry [--sink NAME | --stage STAGE] [ID...]",
		Short: "Put dead letters back through their stage; each leaves the dead-letter stream only when its retry succeeds",
		Example: `  bomstream dlq retry 42 43
  bomstream dlq retry --sink gcs
  bomstream dlq retry --stage transformer`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var req process.RetryRequest
			for _, a := range args {
				id, err := strconv.ParseUint(a, 10, 64)
				if err != nil {
					return fmt.Errorf("dead letter id %q: want a number from `bomstream dlq list`", a)
				}
				req.IDs = append(req.IDs, id)
			}
			if st := stageOf(sink, stage); st != "" {
				req.Stages = []string{st}
			}
			if len(req.IDs) == 0 && len(req.Stages) == 0 {
				return errors.New("say what to retry: --sink NAME, --stage STAGE, or dead letter ids")
			}
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
			out := cmd.OutOrStdout()
			// Without an owner, this process builds the stages the dead
			// letters need: the transformer, and the sinks (all: an id may
			// belong to any).
			st := process.Parts{Attach: true, Transformer: true, Sinks: []string{"*"}, Findings: true}
			return withProcess(cmd, e, cfg, st, func(ctx context.Context, p *process.Pipeline) error {
				res, err := process.Redrive(ctx, p, req, func(line string) { fmt.Fprintln(out, line) })
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%d retried and removed, %d still failing\n", res.Done, res.Failed)
				if res.Failed > 0 {
					return fmt.Errorf("%d dead letters still fail (see the lines above)", res.Failed)
				}
				return nil
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().StringVar(&sink, "sink", "", "retry this sink's dead letters")
	cmd.Flags().StringVar(&stage, "stage", "", "retry this stage's dead letters (transformer, sink.NAME)")
	return cmd
}
