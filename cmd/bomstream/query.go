package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/process"
)

// withHistory opens the stream (quietly), finds the workload named by key
// and calls fn with its history (inventory.History).
func withHistory(cmd *cobra.Command, e *env, c *common, key string, fn func(context.Context, *process.Pipeline, inventory.Workload) error) error {
	cfg, err := c.load(cmd, e.getenv, nil)
	if err != nil {
		return err
	}
	cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
	return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
		w, err := process.FindWorkload(ctx, p, cfg.Cluster, key)
		if err != nil {
			return err
		}
		wl, err := inventory.History(ctx, p.Bus().Reader(), w)
		if err != nil {
			return err
		}
		return fn(ctx, p, wl)
	})
}

func historyCmd(e *env) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "history NAMESPACE/KIND/NAME",
		Short: "List every BOM version of a workload: when, inputHash, bomHash, runtime, models",
		Example: `  bomstream history ml/Deployment/chat
  bomstream history ml/Deployment/chat --nats-url nats://nats:4222`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withHistory(cmd, e, &c, args[0], func(_ context.Context, _ *process.Pipeline, wl inventory.Workload) error {
				return report.History(cmd.OutOrStdout(), wl.ID, wl.Versions)
			})
		},
	}
	c.bind(cmd.Flags())
	return cmd
}

// stamp, tombstoneText and short print as the inventory's reports do
// (package inventory/report).

func getCmd(e *env) *cobra.Command {
	var (
		c  common
		at string
	)
	cmd := &cobra.Command{
		Use:   "get [--at TIME] NAMESPACE/KIND/NAME",
		Short: "Print the BOM a workload had at a point in time (default: now)",
		Example: `  bomstream get ml/Deployment/chat
  bomstream get --at 72h ml/Deployment/chat
  bomstream get --at 2026-11-01T12:00:00Z ml/Deployment/chat`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var when time.Time // zero: the current version
			if at != "" {
				var err error
				if when, err = parseTime(at); err != nil {
					return fmt.Errorf("--at: %w", err)
				}
			}
			return withHistory(cmd, e, &c, args[0], func(ctx context.Context, p *process.Pipeline, wl inventory.Workload) error {
				v, err := wl.BOMAt(when)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				bom, err := api.ReadBOM(ctx, p.Bus().Reader(), v)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				_, err = cmd.OutOrStdout().Write(append(bom, '\n'))
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().StringVar(&at, "at", "", "point in time (RFC 3339, a date, or a duration ago such as 72h)")
	return cmd
}
