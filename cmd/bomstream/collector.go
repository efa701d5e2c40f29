package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/engine"
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
			cfg, err := c.load(cmd, e.getenv, func(cfg *Config) { k.apply(cmd, &cfg.Kubernetes) })
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("cluster") && e.getenv("BOMSTREAM_CLUSTER") == "" && cfg.Cluster == defaultConfig().Cluster {
				return fmt.Errorf("--cluster is required: it names this cluster in every workload identity")
			}
			return runCollector(cmd, e, cfg, !keepPages)
		},
	}
	c.bind(cmd.Flags())
	k.bind(cmd.Flags())
	cmd.Flags().BoolVar(&keepPages, "keep-executable-pages", false, "keep the executable's pages mapped after the first reconcile (by default they are released; a debugger's breakpoints need them kept)")
	return cmd
}

// runCollector is the collector process: logging, the HTTP endpoint, the
// stream and the normalizer, and nothing of the transformer or the sinks, so
// that it stays small. After each first reconcile it gives memory back
// (releaseMemory): the heap left by the initial list, and, with
// releasePages, the executable's pages that starting touched.
func runCollector(cmd *cobra.Command, e *env, cfg Config, releasePages bool) error {
	ctx := cmd.Context()
	log := newLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(cmd.ErrOrStderr())))
	defer func() { _ = log.Sync() }()
	if err := cfg.Validate(e.sinks); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	norm, err := collector.NewNormalizer(cfg.normalizerConfig())
	if err != nil {
		return err
	}
	obs := newObserver()
	ln, err := obs.listen(cfg.HTTP)
	if err != nil {
		return err
	}
	bus, err := stream.Open(ctx, cfg.Stream, log.Named("stream"))
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	defer bus.Close()
	p := &pipeline{cfg: cfg, log: log, obs: obs, bus: bus, norm: norm}
	cfg.Kubernetes.Reconciled = func() { releaseMemory(log, releasePages) }
	col, err := newKubeCollector(p, cfg)
	if err != nil {
		return err
	}
	hctx, stopHTTP := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := obs.serve(hctx, ln, log, e.httpAddr); err != nil {
			log.Error("http endpoint stopped", zap.Error(err))
		}
	}()
	obs.stage("collector", collectorHealth(col))
	err = col.Run(ctx)
	stopHTTP()
	wg.Wait()
	return err
}

func newKubeCollector(p *pipeline, cfg Config) (*kube.Collector, error) {
	kc := cfg.kubeConfig()
	rc, err := kube.RESTConfig(kc.Kubeconfig, kc.Context)
	if err != nil {
		return nil, err
	}
	return kube.New(kc, rc, p.norm, p.bus, p.log.Named("collector"), p.obs.reg)
}

// runCluster is `run --kubeconfig`: the cluster as the source of the whole
// pipeline. Leader election is off: one process, one embedded store.
func runCluster(ctx context.Context, p *pipeline, cfg Config, once bool, out io.Writer) error {
	cfg.Kubernetes.LeaderElection.Disabled = true
	col, err := newKubeCollector(p, cfg)
	if err != nil {
		return err
	}
	p.obs.stage("collector", collectorHealth(col))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	if !once {
		// The re-render at start does not wait for the watch's first
		// pass: a workload whose inputs the new build also reads anew may
		// get two versions (docs/operating.md).
		p.sourceDone()
		werr := col.Run(ctx)
		cancel()
		return errors.Join(werr, <-done)
	}
	res, syncErr := col.Once(ctx)
	p.sourceDone()
	drainErr := p.waitDrained(ctx)
	cancel()
	runErr := <-done
	loaded := files.Loaded{Events: res.Events}
	for _, s := range res.Skipped {
		loaded.Notes = append(loaded.Notes, files.Note{Object: "cluster", Reason: s})
	}
	printSummary(out, p, files.SyncResult{
		Workloads: res.Sync.Workloads, Published: res.Sync.Published, Tombstones: res.Sync.Tombstones,
		Held: res.Sync.Held, Notes: len(res.Skipped),
	}, loaded)
	left := p.leftBehind(context.WithoutCancel(ctx))
	if len(res.Degraded) > 0 {
		kinds := make([]string, 0, len(res.Degraded))
		for k := range res.Degraded {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		fmt.Fprintf(out, "degraded kinds (not listed, so nothing of theirs was tombstoned): %s\n", strings.Join(kinds, ", "))
		for _, k := range kinds {
			p.log.Warn("kind degraded", zap.String("kind", k), zap.Error(res.Degraded[k]))
		}
	}
	return errors.Join(syncErr, drainErr, runErr, left)
}

// collectorHealth reports the collector as a stage for /readyz: degraded,
// naming the kinds and why, while some kinds cannot be watched.
func collectorHealth(col *kube.Collector) func() engine.Health {
	return func() engine.Health {
		report := col.Health()
		bad := kube.Degraded(report)
		if len(bad) == 0 {
			return engine.Health{State: engine.StateUp}
		}
		var why []string
		for _, k := range bad {
			why = append(why, k+": "+report[k].Error())
		}
		return engine.Health{State: engine.StateDegraded, Reason: strings.Join(why, "; ")}
	}
}
