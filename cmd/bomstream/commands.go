package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/process"
)

// common are the flags every pipeline command shares. A flag set on the
// command line wins over BOMSTREAM_* variables, which win over the file.
type common struct {
	configFile string
	cluster    string
	natsURL    string
	natsCreds  string
	dataDir    string
	natsListen string
	httpListen string
	logLevel   string
	logFormat  string
}

func (c *common) bind(f *pflag.FlagSet) {
	f.StringVar(&c.configFile, "config", "", "YAML configuration file (env BOMSTREAM_CONFIG)")
	f.StringVar(&c.cluster, "cluster", "", "cluster name (default \"default\"; env BOMSTREAM_CLUSTER)")
	f.StringVar(&c.natsURL, "nats-url", "", "external NATS URL; empty runs the embedded server (env BOMSTREAM_NATS_URL)")
	f.StringVar(&c.natsCreds, "nats-creds", "", "NATS credentials file for --nats-url (a .creds file: the user JWT and its nkey seed, as nsc generate creds writes it; env BOMSTREAM_NATS_CREDS)")
	f.StringVar(&c.dataDir, "data-dir", "", "embedded server store (default ./bomstream-data; env BOMSTREAM_DATA_DIR)")
	f.StringVar(&c.natsListen, "nats-listen", "", "let the embedded server also accept NATS clients at ADDR, e.g. 127.0.0.1:4222, for stages or commands elsewhere (--nats-url); commands on the same data directory reach the running process by themselves; beyond loopback it needs credentials (env BOMSTREAM_NATS_LISTEN)")
	f.StringVar(&c.httpListen, "http-listen", "", "address of /metrics, /healthz and /readyz, e.g. :9090 (env BOMSTREAM_HTTP_LISTEN)")
	f.StringVar(&c.logLevel, "log-level", "", "debug, info, warn or error (env BOMSTREAM_LOG_LEVEL)")
	f.StringVar(&c.logFormat, "log-format", "", "console or json (env BOMSTREAM_LOG_FORMAT)")
	config.FromEnv(f, "config", "cluster", "nats-url", "nats-creds", "data-dir", "nats-listen", "http-listen", "log-level", "log-format")
}

// load builds the Config: defaults, then the file, then the environment, then
// the flags that were set, then extra (command-specific flags).
func (c *common) load(cmd *cobra.Command, getenv func(string) string, extra func(*process.Config)) (process.Config, error) {
	env := config.Env{Getenv: getenv, Warn: func(w string) { fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w) }}
	if err := env.SetFlags(cmd.Flags()); err != nil { // BOMSTREAM_NATS_URL sets an unset --nats-url
		return process.Config{}, err
	}
	cfg, err := process.Load(c.configFile, env)
	if err != nil {
		return cfg, err
	}
	set := func(name string, dst *string, v string) {
		if cmd.Flags().Changed(name) {
			*dst = v
		}
	}
	set("cluster", &cfg.Cluster, c.cluster)
	set("nats-url", &cfg.Stream.URL, c.natsURL)
	set("nats-creds", &cfg.Stream.CredsFile, c.natsCreds)
	set("data-dir", &cfg.Stream.DataDir, c.dataDir)
	set("nats-listen", &cfg.Stream.Listen, c.natsListen)
	set("http-listen", &cfg.HTTP.Listen, c.httpListen)
	set("log-level", &cfg.Log.Level, c.logLevel)
	set("log-format", &cfg.Log.Format, c.logFormat)
	if extra != nil {
		extra(&cfg)
	}
	return cfg, nil
}

// withProcess runs body in a process of the parts asked for (process.Run),
// serving the inventory API when they do.
func withProcess(cmd *cobra.Command, e *env, cfg process.Config, parts process.Parts, body func(ctx context.Context, p *process.Pipeline) error) error {
	env := processEnv(cmd, e)
	env.API = func(ctx context.Context, p *process.Pipeline, log *zap.Logger) (func() error, error) {
		return startAPI(ctx, cmd, e, p, parts, log)
	}
	return process.Run(cmd.Context(), env, cfg, parts, body)
}

// processEnv is what a process takes from the command and e.
func processEnv(cmd *cobra.Command, e *env) process.Env {
	return process.Env{Stderr: cmd.ErrOrStderr(), Getenv: e.getenv, Sinks: e.sinks, HTTPAddr: e.httpAddr}
}

func runCmd(e *env) *cobra.Command {
	var (
		c         common
		manifests string
		once      bool
		interval  time.Duration
		sinkDir   string
		toStdout  bool
		dryRun    bool
		k         kubeFlags // the cluster source (collector.go)
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the whole pipeline in one process (embedded JetStream by default)",
		Example: `  bomstream run --manifests deploy/ --once
  bomstream run --kubeconfig ~/.kube/config --api-listen 127.0.0.1:8080
  bomstream run --in-cluster --config /etc/bomstream/config.yaml`,
		Long: `run starts the collector source, the transformer and the sinks in one process.
With no flags it keeps its JetStream store in ./bomstream-data and writes BOMs
as files under ./boms.

With --manifests DIR it reads manifests instead of a cluster; with --once it
syncs them, waits until every BOM is exported, prints a summary and exits.
With --kubeconfig FILE, or --in-cluster in a pod (its service account), the
cluster is the source; with --once it lists the cluster, publishes, drains
the pipeline into the sinks, prints the same summary and exits: a
one-command inventory of a cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, func(cfg *process.Config) {
				if cmd.Flags().Changed("manifests") {
					cfg.Manifests.Dir = manifests
				}
				if once {
					cfg.Manifests.Once = true
				}
				if cmd.Flags().Changed("interval") {
					cfg.Manifests.Interval = interval
				}
				k.apply(cmd, &cfg.Kubernetes)
				if k.confirm {
					cfg.Manifests.ConfirmTombstones = true
				}
				if len(cfg.Sinks) == 0 {
					cfg.Sinks = []process.SinkConfig{{Name: "file", Type: "file", Config: map[string]any{"dir": sinkDir}}}
					if toStdout {
						cfg.Sinks = append(cfg.Sinks, process.SinkConfig{Name: "stdout", Type: "stdout"})
					}
				}
			})
			if err != nil {
				return err
			}
			cluster, err := runSource(cmd, &k, cfg)
			if err != nil {
				return err
			}
			st := process.Parts{Source: true, Transformer: true, Sinks: []string{"*"}, DryRun: dryRun, Summary: cfg.Manifests.Once, Findings: !dryRun, API: true}
			return withProcess(cmd, e, cfg, st, func(ctx context.Context, p *process.Pipeline) error {
				return process.Serve(ctx, p, cluster, cmd.OutOrStdout())
			})
		},
	}
	c.bind(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&manifests, "manifests", "", "read workloads from this directory of manifests (env BOMSTREAM_MANIFESTS)")
	config.FromEnv(f, "manifests")
	f.BoolVar(&once, "once", false, "sync the manifests (or list the cluster) once, drain the pipeline, print a summary and exit")
	f.DurationVar(&interval, "interval", 2*time.Second, "how often to look for edited manifests")
	f.StringVar(&sinkDir, "sink-dir", "boms", "directory of the default file sink (when no sink is configured)")
	f.BoolVar(&toStdout, "stdout", false, "also print every BOM as a JSON line (when no sink is configured)")
	bindDryRun(f, &dryRun)
	k.bind(f)
	bindAPI(cmd)
	return cmd
}

// runSource says whether run reads a cluster (else manifests), and refuses
// none, both, or --once without a source.
func runSource(cmd *cobra.Command, k *kubeFlags, cfg process.Config) (cluster bool, err error) {
	if cluster, err = k.clusterSource(cmd); err != nil {
		return false, err
	}
	switch {
	case cluster && cfg.Manifests.Dir != "":
		return false, fmt.Errorf("a cluster (--kubeconfig, --in-cluster) and --manifests: give one source")
	case cfg.Manifests.Once && cfg.Manifests.Dir == "" && !cluster:
		return false, fmt.Errorf("--once needs --manifests DIR, --kubeconfig FILE or --in-cluster")
	case cfg.Manifests.Dir == "" && !cluster:
		return false, fmt.Errorf("no source: give --manifests DIR, --kubeconfig FILE or --in-cluster")
	}
	return cluster, nil
}
