package kubeplugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/filters"
	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/schemas"
)

// Env is what the plugin takes from its process: output streams and
// environment variables ($KUBECONFIG, $HOME).
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// Run runs `kubectl bomstream` with args (os.Args[1:]).
func Run(ctx context.Context, args []string, env Env) error {
	var conn Connection
	root := &cobra.Command{
		Use:           "bomstream",
		Short:         "Ask bomstream's inventory which models and inference engines run where",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl bomstream"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	conn.bind(root.PersistentFlags())
	root.AddCommand(findCmd(&conn, env), getCmd(&conn, env), historyCmd(&conn, env))
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	return root.ExecuteContext(ctx)
}

func findCmd(conn *Connection, env Env) *cobra.Command {
	var ff filters.Flags
	cmd := &cobra.Command{
		Use:   "find [--model ID|GLOB] [--runtime 'vllm<0.8.5'] [--digest D] [--image REF] ...",
		Short: "Find workloads across the inventory, as `bomstream find` does",
		Long: `find asks the bomstream API which workloads the filters select; the flags,
their meaning and the output are those of ` + "`bomstream find`" + `. Without -n it
looks in every namespace of every cluster bomstream holds. With --findings it
lists only the workloads with open policy findings, each with them (-o json:
under notes.findings).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := report.CheckFormat(ff.Output); err != nil {
				return err
			}
			fields := ff.Fields(cmd.Flags())
			if _, _, err := api.ParseQuery(fields, time.Now(), nil); err != nil {
				return err
			}
			t, err := conn.connect(cmd.Context(), env.Getenv)
			if err != nil {
				return err
			}
			es, err := t.api.Find(cmd.Context(), fields)
			if err != nil {
				return err
			}
			return report.Entries(cmd.OutOrStdout(), ff.Output, es)
		},
	}
	ff.Bind(cmd.Flags())
	ff.BindFindings(cmd.Flags())
	return cmd
}

// workloadFlags name one workload: KIND/NAME in -n NAMESPACE of --cluster.
type workloadFlags struct {
	namespace, cluster, at string
}

func (w *workloadFlags) bind(cmd *cobra.Command, at bool) {
	cmd.Flags().StringVarP(&w.namespace, "namespace", "n", "", "the workload's namespace (default: the context's)")
	cmd.Flags().StringVar(&w.cluster, "cluster", "", "bomstream's name of the workload's cluster (default: the API Service's, or the only one holding the workload)")
	if at {
		cmd.Flags().StringVar(&w.at, "at", "", "as of TIME (RFC 3339, a date, or a duration ago such as 72h) instead of now")
	}
}

// resolve connects and finds the workload KIND/NAME names: its cluster
// and exact kind, through the inventory.
func (w *workloadFlags) resolve(ctx context.Context, conn *Connection, env Env, ref string) (*target, inventory.Entry, error) {
	kind, name, err := parseRef(ref)
	if err != nil {
		return nil, inventory.Entry{}, err
	}
	t, err := conn.connect(ctx, env.Getenv)
	if err != nil {
		return nil, inventory.Entry{}, err
	}
	ns := w.namespace
	if ns == "" {
		ns = t.namespace
	}
	fields := map[string][]string{"namespace": {ns}, "kind": {kind}, "state": {"all"}}
	cluster := w.cluster
	if cluster == "" {
		cluster = t.cluster
	}
	if cluster != "" {
		fields["cluster"] = []string{cluster}
	}
	es, err := t.api.Find(ctx, fields)
	if err != nil {
		return nil, inventory.Entry{}, err
	}
	found := map[string]inventory.Entry{} // by cluster: one per name there (the API's detail takes the latest)
	for _, e := range es {
		if e.Name == name {
			found[e.Cluster] = e
		}
	}
	key := ns + "/" + kind + "/" + name
	switch len(found) {
	case 0:
		in := "any cluster"
		if cluster != "" {
			in = "cluster " + cluster
		}
		return nil, inventory.Entry{}, fmt.Errorf("workload %s not found in %s (via %s)", key, in, t.api.Via)
	case 1:
		for _, e := range found {
			return t, e, nil
		}
	}
	var cs []string
	for c := range found {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	return nil, inventory.Entry{}, fmt.Errorf("workload %s is in clusters %v: choose one with --cluster", key, cs)
}

func getCmd(conn *Connection, env Env) *cobra.Command {
	var (
		w      workloadFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "get KIND/NAME [-n NAMESPACE] [-o json]",
		Short: "Print the current AI-BOM of a workload: a summary, or the CycloneDX BOM with -o json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "summary" && output != "json" {
				return fmt.Errorf("--output %q: not summary or json", output)
			}
			t, e, err := w.resolve(cmd.Context(), conn, env, args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				bom, err := t.api.BOM(cmd.Context(), e.Cluster, e.Namespace, e.Kind, e.Name, w.at)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(append(bom, '\n'))
				return err
			}
			d, err := t.api.Workload(cmd.Context(), e.Cluster, e.Namespace, e.Kind, e.Name, w.at)
			if err != nil {
				return err
			}
			return report.Summary(cmd.OutOrStdout(), d.Workload)
		},
	}
	w.bind(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", "summary", "summary, or json: the CycloneDX BOM as bomstream stores it")
	return cmd
}

func historyCmd(conn *Connection, env Env) *cobra.Command {
	var w workloadFlags
	cmd := &cobra.Command{
		Use:   "history KIND/NAME [-n NAMESPACE]",
		Short: "List every BOM version of a workload, as `bomstream history` does",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, e, err := w.resolve(cmd.Context(), conn, env, args[0])
			if err != nil {
				return err
			}
			d, err := t.api.Workload(cmd.Context(), e.Cluster, e.Namespace, e.Kind, e.Name, "")
			if err != nil {
				return err
			}
			id := schemas.Workload{Cluster: d.Workload.Cluster, Namespace: d.Workload.Namespace, Kind: d.Workload.Kind,
				APIVersion: d.Workload.APIVersion, Name: d.Workload.Name, UID: d.Workload.UID}
			return report.History(cmd.OutOrStdout(), id, d.Versions)
		},
	}
	w.bind(cmd, false)
	return cmd
}
