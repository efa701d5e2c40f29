package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/findings"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/process"
)

// findingsCmd is `bomstream findings`: the policy findings on FINDINGS
// (docs/findings.md).
func findingsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "findings",
		Short: "Policy findings raised on the AI-BOMs: list them, re-evaluate BOMS, print the default rules",
		Example: `  bomstream findings list
  bomstream findings replay
  bomstream findings rules > findings-rules.yaml`,
	}
	cmd.AddCommand(findingsListCmd(e), findingsReplayCmd(e), findingsRulesCmd())
	return cmd
}

func findingsListCmd(e *env) *cobra.Command {
	var (
		c      common
		f      stored.Filter
		output string
	)
	cmd := &cobra.Command{
		Use:   "list [--rule ID] [--severity S] [--namespace NS] [--cluster C] [--state open|resolved|all]",
		Short: "List the findings in their current state (open ones by default)",
		Example: `  bomstream findings list
  bomstream findings list --severity high -o json
  bomstream findings list --state all --namespace ml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "csv" {
				return fmt.Errorf("--output %q: not table, json or csv", output)
			}
			if err := f.Validate(); err != nil {
				return fmt.Errorf("findings list: %w", err)
			}
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("cluster") {
				f.Cluster = cfg.Cluster // else every cluster
			}
			cfg.Log.Level = cmp.Or(cfg.Log.Level, "warn")
			return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				list, err := stored.List(ctx, p.Bus().Reader(), f)
				if err != nil {
					return err
				}
				return report.Findings(cmd.OutOrStdout(), output, list)
			})
		},
	}
	c.bind(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&f.Rule, "rule", "", "only this rule id")
	fl.StringVar(&f.Severity, "severity", "", "only this severity: info, low, medium, high or critical")
	fl.StringVarP(&f.Namespace, "namespace", "n", "", "only this namespace")
	fl.StringVar(&f.State, "state", stored.StateOpen, "open, resolved or all")
	fl.StringVarP(&output, "output", "o", "table", "table, json or csv")
	return cmd
}

// findingsReplayCmd evaluates BOMS again: what FINDINGS already holds is
// not written twice (docs/findings.md).
func findingsReplayCmd(e *env) *cobra.Command {
	var (
		c       common
		fromSeq uint64
	)
	cmd := &cobra.Command{
		Use:   "replay [--from-seq N]",
		Short: "Evaluate the BOMS stream again against the rules; findings already recorded are not written twice",
		Example: `  bomstream findings replay
  bomstream findings replay --from-seq 1000
  bomstream findings replay --nats-url nats://nats:4222`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			if cfg.Findings.Disabled {
				return errors.New("findings replay: findings.disabled is set")
			}
			return withProcess(cmd, e, cfg, process.Parts{Attach: true, Findings: true}, func(ctx context.Context, p *process.Pipeline) error {
				if p.Findings() == nil {
					return errors.New("findings replay: the data directory's owner runs the findings stage; stop it, or give --nats-url")
				}
				n, err := p.Findings().Replay(ctx, fromSeq)
				fmt.Fprintf(cmd.OutOrStdout(), "findings replay: %d evaluated, %d older versions skipped, %d opened, %d resolved\n",
					n.Evaluated, n.Older, n.Opened, n.Resolved)
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().Uint64Var(&fromSeq, "from-seq", 0, "evaluate from this BOMS stream sequence")
	return cmd
}

func findingsRulesCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rules",
		Short:   "Print the default rules file, to copy and edit",
		Example: `  bomstream findings rules > findings-rules.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(findings.DefaultRulesYAML())
			return err
		},
	}
}
