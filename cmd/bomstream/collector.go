package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/process"
)

// kubeFlags are the cluster-source flags of `collector` and `run`. A flag
// set on the command line wins over the kubernetes: section of the file.
type kubeFlags struct {
	kubeconfig, context, selector string
	namespaces                    []string
	allNamespaces, confirm        bool
	inCluster                     bool
}

func (k *kubeFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster to watch (default $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	f.StringVar(&k.context, "context", "", "kubeconfig context (default the current one)")
	f.StringVar(&k.selector, "namespace-selector", "", "label selector of the namespaces to watch (default "+kube.DefaultNamespaceSelector+")")
	f.BoolVar(&k.allNamespaces, "all-namespaces", false, "watch every namespace, labelled or not")
	f.StringSliceVar(&k.namespaces, "namespaces", nil, "namespace-restricted mode: watch only these namespaces (Roles only)")
	f.BoolVar(&k.confirm, "confirm-tombstones", false, "write tombstones even when a pass deletes more than kubernetes.maxTombstoneShare of the workloads")
	f.BoolVar(&k.inCluster, "in-cluster", false, "read the cluster this pod runs in, through its service account (no kubeconfig file; $KUBECONFIG wins when set); makes the cluster the source of run")
}

// clusterSource reports whether `run` reads a cluster: --kubeconfig FILE,
// or --in-cluster in a pod, where the client configuration with no file
// falls back to the pod's service account.
func (k *kubeFlags) clusterSource(cmd *cobra.Command) (bool, error) {
	file := cmd.Flags().Changed("kubeconfig")
	if file && k.inCluster {
		return false, fmt.Errorf("--kubeconfig and --in-cluster: give one")
	}
	return file || k.inCluster, nil
}

func (k *kubeFlags) apply(cmd *cobra.Command, c *kube.Config) {
	ch := cmd.Flags().Changed
	if ch("kubeconfig") {
		c.Kubeconfig = k.kubeconfig
	}
	if ch("context") {
		c.Context = k.context
	}
	if ch("namespace-selector") {
		c.NamespaceSelector = k.selector
	}
	if ch("all-namespaces") {
		c.AllNamespaces = k.allNamespaces
		if k.allNamespaces {
			c.NamespaceSelector = ""
		}
	}
	if ch("namespaces") {
		c.Namespaces = k.namespaces
		c.NamespaceSelector, c.AllNamespaces = "", false
	}
	if k.confirm {
		c.ConfirmTombstones = true
	}
}

// collectorCmd runs the cluster collector alone: it watches one cluster and
// publishes to an external (or the embedded) JetStream.
func collectorCmd(e *env) *cobra.Command {
	var (
		c         common
		k         kubeFlags
		keepPages bool
	)
	cmd := &cobra.Command{
		Use:   "collector --cluster NAME",
		Short: "Run the cluster collector: watch Kubernetes, publish workload changes to CHANGES",
		Example: `  bomstream collector --cluster prod-eu --nats-url nats://nats:4222
  bomstream collector --cluster dev --kubeconfig ~/.kube/config --context kind-dev
  bomstream collector --cluster prod-eu --config /etc/bomstream/config.yaml`,
		Long: `collector watches one Kubernetes cluster (in-cluster, or --kubeconfig /
KUBECONFIG with --context) and publishes a WorkloadChange to CHANGES whenever
a workload's inputs change, a tombstone when it is deleted. Several replicas
elect one publisher with a Lease (kubernetes.leaderElection). The Lease is the
only object it writes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, func(cfg *process.Config) { k.apply(cmd, &cfg.Kubernetes) })
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("cluster") && e.getenv("BOMSTREAM_CLUSTER") == "" && cfg.Cluster == process.DefaultConfig().Cluster {
				return fmt.Errorf("--cluster is required: it names this cluster in every workload identity")
			}
			return process.RunCollector(cmd.Context(), processEnv(cmd, e), cfg, !keepPages)
		},
	}
	c.bind(cmd.Flags())
	k.bind(cmd.Flags())
	cmd.Flags().BoolVar(&keepPages, "keep-executable-pages", false, "keep the executable's pages mapped after the first reconcile (by default they are released; a debugger's breakpoints need them kept)")
	return cmd
}
