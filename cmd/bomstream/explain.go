package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/transformer"
)

// explainCmd: why a workload is or is not serving, from a manifest file or
// the store.
func explainCmd(e *env) *cobra.Command {
	var (
		c                       common
		rules, profiles, outFmt string
	)
	cmd := &cobra.Command{
		Use:   "explain FILE|DIR|NAMESPACE/KIND/NAME",
		Short: "Say why a workload is or is not serving: every signal for and against, the runtimes and models chosen",
		Long: `explain tells why bomstream calls a workload serving or not, which runtimes
and models it chose, and every signal for and against each container with
its weight and the place in the manifest it was read from: the first thing
to run when the inventory surprises you.

Given a manifest file or directory, it explains every workload in it as
render -f reads them. Given NAMESPACE/KIND/NAME, it explains the workload's
last observed inputs in the store, through the running process that owns the
data directory (like history), or over --nats-url.`,
		Example: `  bomstream explain deploy/vllm.yaml
  bomstream explain ml/Deployment/chat
  bomstream explain -o json manifests/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := process.ExplainWriter{Out: cmd.OutOrStdout(), JSON: outFmt == "json"}
			if outFmt != "text" && outFmt != "json" {
				return fmt.Errorf("explain -o: %q is not text or json", outFmt)
			}
			if _, err := os.Stat(args[0]); err == nil {
				return process.ExplainFiles(args[0], c.cluster, rules, profiles, w, cmd.ErrOrStderr())
			}
			if strings.Count(args[0], "/") != 2 {
				return fmt.Errorf("explain %s: neither a file nor NAMESPACE/KIND/NAME", args[0])
			}
			return explainStored(cmd, e, &c, args[0], w)
		},
	}
	c.bind(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&rules, "rules", "", "YAML file that extends or overrides the detection rules (files only; the store uses the configuration's)")
	f.StringVar(&profiles, "profiles", "", "YAML file that extends or overrides the kind profiles (files only)")
	f.StringVarP(&outFmt, "output", "o", "text", "text or json")
	return cmd
}

// explainStored explains the last observed inputs of the workload named
// key in the store.
func explainStored(cmd *cobra.Command, e *env, c *common, key string, w process.ExplainWriter) error {
	cfg, err := c.load(cmd, e.getenv, nil)
	if err != nil {
		return err
	}
	cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
	r, err := transformer.NewRenderer(process.RendererConfig(cfg))
	if err != nil {
		return err
	}
	return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
		wl, err := process.FindWorkload(ctx, p, cfg.Cluster, key)
		if err != nil {
			return err
		}
		ev, _, ok, err := changelog.New(p.Bus()).LastChange(ctx, wl)
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("explain %s: no change of it is stored", key)
		case ev.IsTombstone():
			return w.Write(transformer.Explanation{Workload: wl, Reason: transformer.SkipTombstone})
		}
		x, err := r.Explain(ev)
		if err != nil {
			return fmt.Errorf("explain %s: %w", key, err)
		}
		return w.Write(x)
	})
}
