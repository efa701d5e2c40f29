package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
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
}

// load builds the Config: defaults, then the file, then the environment, then
// the flags that were set, then extra (command-specific flags).
func (c *common) load(cmd *cobra.Command, getenv func(string) string, extra func(*Config)) (Config, error) {
	cfg := defaultConfig()
	file := c.configFile
	if file == "" {
		file = getenv("BOMSTREAM_CONFIG")
	}
	if file != "" {
		if err := loadConfigFile(&cfg, file); err != nil {
			return cfg, err
		}
	}
	if err := applyEnv(&cfg, getenv); err != nil {
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

// process starts logging and the HTTP endpoint, builds the pipeline, and calls
// body with it. It closes everything on return.
func process(cmd *cobra.Command, e *env, cfg Config, st stages, body func(ctx context.Context, p *pipeline) error) error {
	ctx := cmd.Context()
	log := newLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(cmd.ErrOrStderr())))
	defer func() { _ = log.Sync() }()
	obs := newObserver()
	if err := withDefaultSinks(cfg).Validate(e.sinks); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err) // before anything is created
	}
	ln, err := obs.listen(cfg.HTTP)
	if err != nil {
		return err
	}
	p, err := newPipeline(ctx, cfg, st, e.sinks, e.getenv, log, obs)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	defer p.close()
	hctx, stopHTTP := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := obs.serve(hctx, ln, log, e.httpAddr); err != nil {
			log.Error("http endpoint stopped", zap.Error(err))
		}
	}()
	stopAPI, err := startAPI(hctx, cmd, e, p, st, log)
	if err != nil {
		stopHTTP()
		wg.Wait()
		return err
	}
	err = body(ctx, p)
	stopHTTP()
	wg.Wait()
	return errors.Join(err, stopAPI())
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
			cfg, err := c.load(cmd, e.getenv, func(cfg *Config) {
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
					cfg.Sinks = []SinkConfig{{Name: "file", Type: "file", Config: map[string]any{"dir": sinkDir}}}
					if toStdout {
						cfg.Sinks = append(cfg.Sinks, SinkConfig{Name: "stdout", Type: "stdout"})
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
			st := stages{source: true, transformer: true, sinks: []string{"*"}, dryRun: dryRun, summary: cfg.Manifests.Once, findings: !dryRun, api: true}
			return process(cmd, e, cfg, st, func(ctx context.Context, p *pipeline) error {
				p.checkAtStart(ctx)
				if cluster {
					return runCluster(ctx, p, cfg, cfg.Manifests.Once, cmd.OutOrStdout())
				}
				if cfg.Manifests.Once {
					return runOnce(ctx, p, cmd.OutOrStdout())
				}
				return runWatch(ctx, p)
			})
		},
	}
	c.bind(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&manifests, "manifests", "", "read workloads from this directory of manifests (env BOMSTREAM_MANIFESTS)")
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
func runSource(cmd *cobra.Command, k *kubeFlags, cfg Config) (cluster bool, err error) {
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

// runOnce syncs the manifests, waits until every stage has drained, and
// prints what was found.
func runOnce(ctx context.Context, p *pipeline, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	res, loaded, syncErr := p.watcher().Once(ctx)
	p.sourceDone()
	drainErr := p.waitDrained(ctx)
	cancel()
	runErr := <-done
	printSummary(out, p, res, loaded)
	for _, n := range loaded.Notes {
		p.log.Debug("skipped", zap.String("note", n.String()))
	}
	return errors.Join(syncErr, drainErr, runErr, p.leftBehind(context.WithoutCancel(ctx)))
}

// leftBehind is an error when the run leaves something unexported: messages
// it dead-lettered, or dead letters of its stages still waiting from before.
// `run --once` then exits non-zero: its summary is not the whole truth.
func (p *pipeline) leftBehind(ctx context.Context) error {
	var now uint64
	if p.svc != nil {
		now += p.svc.Counts().DeadLettered
	}
	for _, s := range p.sinks {
		now += s.runner.Stats().DeadLettered
	}
	mine := map[string]bool{schemas.StageTransformer: p.svc != nil}
	for _, s := range p.sinks {
		mine[schemas.SinkStage(s.cfg.Name)] = true
	}
	waiting := 0
	if err := p.bus.DeadLetters(ctx, "", func(d stream.DeadLetter) error {
		if mine[d.Stage] {
			waiting++
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read the dead-letter stream: %w", err)
	}
	switch {
	case now > 0:
		return fmt.Errorf("%d messages dead-lettered in this run, %d dead letters in all: see `bomstream dlq list`, then `bomstream dlq retry`", now, waiting)
	case waiting > 0:
		return fmt.Errorf("%d dead letters from earlier runs are still waiting: see `bomstream dlq list`, then `bomstream dlq retry`", waiting)
	}
	return nil
}

func runWatch(ctx context.Context, p *pipeline) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	werr := p.watcher().Run(ctx)
	cancel()
	return errors.Join(werr, <-done)
}

// printSummary prints one row per workload read, then the totals.
func printSummary(out io.Writer, p *pipeline, res files.SyncResult, loaded files.Loaded) {
	type row struct{ workload, runtime, models, roles string }
	var rows []row
	boms := 0
	generic := map[string]int{} // kind -> serving workloads read by the generic profile
	rendered := p.rendered
	if rendered == nil {
		rendered = newSummaries(p.renderer)
	}
	for _, ev := range loaded.Events {
		r, err := rendered.of(ev)
		w := ev.Data.Workload
		name := w.Namespace + "/" + w.Kind + "/" + w.Name
		switch {
		case err != nil:
			rows = append(rows, row{name, "error: " + err.Error(), "", ""})
		case !r.serving:
			continue
		default:
			boms++
			rows = append(rows, row{name, runtimesText(r.summary), orDash(strings.Join(r.summary.Models, ", ")), orDash(strings.Join(r.summary.Roles, ", "))})
			if in := ev.Data.Inputs; in != nil && in.Profile == schemas.ProfileGeneric {
				generic[genericKind(in.Workload)]++
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].workload < rows[j].workload })
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tRUNTIME\tMODELS\tROLES")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.workload, r.runtime, r.models, r.roles)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\n%d workloads read, %d serving (one BOM each), %d notes; %d new events, %d tombstones\n",
		res.Workloads, boms, res.Notes, res.Published, res.Tombstones)
	if len(generic) > 0 {
		kinds := make([]string, 0, len(generic))
		total := 0
		for k, n := range generic {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
			total += n
		}
		sort.Strings(kinds)
		fmt.Fprintf(out, "%d serving workloads of kinds with no profile, read by the generic profile: %s (docs/operating.md: add a profile)\n",
			total, strings.Join(kinds, ", "))
	}
	if res.Held > 0 {
		fmt.Fprintf(out, "%d tombstones held: more than the allowed share of the workloads is gone; run again to confirm, or pass --confirm-tombstones\n", res.Held)
	}
	for _, s := range p.sinks {
		st := s.runner.Stats()
		fmt.Fprintf(out, "sink %s: %d exported, %d tombstones, %d already exported, %d dead-lettered\n",
			s.cfg.Name, st.Exported, st.Tombstones, st.SkippedDuplicate, st.DeadLettered)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// genericKind is the label of a workload's kind: "Kind.group", or "Kind".
func genericKind(w schemas.Workload) string {
	group, _, ok := strings.Cut(w.APIVersion, "/")
	if !ok {
		return w.Kind
	}
	return w.Kind + "." + group
}
