package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bomstream/bomstream/findings"
	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/filters"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
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
			cfg.Log.Level = orDefault(cfg.Log.Level, "warn")
			return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
				list, err := stored.List(ctx, p.Bus().Reader(), f)
				if err != nil {
					return err
				}
				return printFindings(cmd.OutOrStdout(), output, list)
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

// printFindings writes the findings as a table, JSON (an array of events)
// or CSV.
func printFindings(out io.Writer, format string, list []schemas.FindingEvent) error {
	switch format {
	case "json":
		if list == nil {
			list = []schemas.FindingEvent{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	case "csv":
		w := csv.NewWriter(out)
		_ = w.Write([]string{"cluster", "namespace", "kind", "name", "rule", "severity", "state", "subject", "since", "change", "reason", "message"})
		for _, ev := range list {
			_ = w.Write([]string{ev.Workload.Cluster, ev.Workload.Namespace, ev.Workload.Kind, ev.Workload.Name, ev.Rule, ev.Severity,
				ev.State, ev.Subject, stamp(ev.Time), fmt.Sprint(ev.ChangeSeq), ev.Reason, ev.Message})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tRULE\tSEVERITY\tSTATE\tSINCE\tSUBJECT")
	for _, ev := range list {
		state := ev.State
		if ev.Reason != "" {
			state += " (" + ev.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ev.Workload, ev.Rule, ev.Severity, state, stamp(ev.Time), ev.Subject)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d findings\n", len(list))
	return err
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

// findingsAPIHook serves /api/v1/findings beside the workloads, under the
// same token check: the current state of every finding, filtered and
// paged (stored.Handler), from the process's findings index once it has
// read FINDINGS; and the workloads' findings=true filter (find --findings
// through the API).
func findingsAPIHook(_ context.Context, s *api.Server, p *process.Pipeline) error {
	s.Handle("GET /api/v1/findings", stored.Handler(p.Bus().Reader(), p.FindingsIndex))
	s.FilterFindings(apiFindings{p.FindingsIndex, p.Bus().Reader()})
	return nil
}

// apiFindings answers the API's findings filter: which workloads have
// open findings from the index, their events from FINDINGS.
type apiFindings struct {
	*stored.Index
	store stored.Store
}

func (a apiFindings) Open(ctx context.Context, ws []schemas.Workload) ([][]schemas.FindingEvent, error) {
	wfs, err := stored.OpenFor(ctx, a.store, ws)
	out := make([][]schemas.FindingEvent, len(wfs))
	for i, wf := range wfs {
		out[i] = wf.Findings
	}
	return out, err
}

// findingsFindHook is `find --findings`: only the workloads with open
// findings, each annotated with them (Entry.Notes["findings"]).
func findingsFindHook() findHook {
	var on bool
	return findHook{
		bind: func(f *pflag.FlagSet) {
			f.BoolVar(&on, "findings", false, filters.FindingsUsage)
		},
		apply: func(ctx context.Context, p *process.Pipeline, q *inventory.Query) error {
			if !on {
				return nil
			}
			open, err := stored.List(ctx, p.Bus().Reader(), stored.Filter{})
			if err != nil {
				return err
			}
			byUID := map[string][]schemas.FindingEvent{}
			for _, ev := range open {
				k := ev.Workload.Cluster + "/" + ev.Workload.UID
				byUID[k] = append(byUID[k], ev)
			}
			prev := q.Check
			q.Check = func(e *inventory.Entry) bool {
				if prev != nil && !prev(e) {
					return false
				}
				fs := byUID[e.Cluster+"/"+e.UID]
				if len(fs) == 0 {
					return false
				}
				if e.Notes == nil {
					e.Notes = map[string]any{}
				}
				e.Notes["findings"] = fs
				return true
			}
			return nil
		},
	}
}
