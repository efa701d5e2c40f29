package main

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/filters"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/process"
)

func findCmd(e *env) *cobra.Command {
	var (
		c        common
		ff       filters.Flags
		findings bool // only the workloads with open findings, annotated with them
	)
	cmd := &cobra.Command{
		Use:   "find [--model ID|GLOB] [--runtime 'vllm<0.8.5'] [--digest D] [--image REF] ...",
		Short: "Find workloads across the inventory: by model, runtime version range, image, digest, namespace, time",
		Example: `  bomstream find --model 'meta-llama/*'
  bomstream find --runtime 'vllm<0.8.5' -o json
  bomstream find --findings --namespace ml`,
		Long: `find loads the inventory from the BOMS stream (the local data directory, through
the running process when one holds it, or --nats-url) and lists the workloads
the filters select. Filters of different flags combine (all must hold); a
repeated flag lists alternatives. A runtime whose version is unknown or not a
release (latest, a date) never matches a version range: find it with the
bare name (--runtime vllm).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := report.CheckFormat(ff.Output); err != nil {
				return err
			}
			q, err := inventory.ParseQuery(ff.Fields(cmd.Flags()), time.Now())
			if err != nil {
				return err
			}
			cfg, err := c.load(cmd, e.getenv, func(cfg *process.Config) {
				cfg.Cluster = "default" // --cluster is a filter here; the process's own name is unused
			})
			if err != nil {
				return err
			}
			cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
			return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				if findings {
					open, err := stored.List(ctx, p.Bus().Reader(), stored.Filter{})
					if err != nil {
						return err
					}
					q.KeepOpenFindings(open)
				}
				ix := inventory.New()
				if _, err := ix.Load(ctx, p.Bus().Reader()); err != nil {
					return err
				}
				return report.Entries(cmd.OutOrStdout(), ff.Output, ix.Find(q))
			})
		},
	}
	bindCommonExcept(&c, cmd.Flags(), "cluster")
	ff.Bind(cmd.Flags())
	cmd.Flags().BoolVar(&findings, "findings", false, filters.FindingsUsage)
	return cmd
}

// bindCommonExcept binds the common flags but those named (a command
// that uses the name for something else).
func bindCommonExcept(c *common, f *pflag.FlagSet, names ...string) {
	all := pflag.NewFlagSet("common", pflag.ContinueOnError)
	c.bind(all)
	all.VisitAll(func(fl *pflag.Flag) {
		if slices.Contains(names, fl.Name) {
			return
		}
		f.AddFlag(fl)
	})
}
