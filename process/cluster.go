package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
)

// RunCollector is the collector process (bomstream collector): logging,
// the HTTP endpoint, the stream and the normalizer, and nothing of the
// transformer or the sinks, so that it stays small. After each first
// reconcile it gives memory back (releaseMemory): the heap left by the
// initial list, and, with releasePages, the executable's pages that
// starting touched.
func RunCollector(ctx context.Context, env Env, cfg Config, releasePages bool) error {
	log := NewLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(env.Stderr)))
	defer func() { _ = log.Sync() }()
	if err := cfg.Validate(env.Sinks); err != nil {
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
	p := &Pipeline{cfg: cfg, log: log, obs: obs, bus: bus, norm: norm}
	cfg.Kubernetes.Reconciled = func() { releaseMemory(log, releasePages) }
	col, err := newKubeCollector(p, cfg)
	if err != nil {
		return err
	}
	hctx, stopHTTP := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := obs.serve(hctx, ln, log, env.HTTPAddr); err != nil {
			log.Error("http endpoint stopped", zap.Error(err))
		}
	})
	st := collectorStage{col}
	obs.stage(st.Name(), st.Health)
	err = st.Run(ctx)
	stopHTTP()
	wg.Wait()
	return err
}

func newKubeCollector(p *Pipeline, cfg Config) (*kube.Collector, error) {
	kc := cfg.kubeConfig()
	rc, err := kube.RESTConfig(kc.Kubeconfig, kc.Context)
	if err != nil {
		return nil, err
	}
	return kube.New(kc, rc, p.norm, changelog.New(p.bus), p.log.Named("collector"), p.obs.reg)
}

// runCluster is `run --kubeconfig`: the cluster as the source of the whole
// pipeline. Leader election is off: one process, one embedded store.
func runCluster(ctx context.Context, p *Pipeline, once bool, out io.Writer) error {
	cfg := p.cfg
	cfg.Kubernetes.LeaderElection.Disabled = true
	col, err := newKubeCollector(p, cfg)
	if err != nil {
		return err
	}
	st := collectorStage{col}
	p.obs.stage(st.Name(), st.Health)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	if !once {
		// The re-render at start does not wait for the watch's first
		// pass: a workload whose inputs the new build also reads anew may
		// get two versions (docs/operating.md).
		sourceDone(p)
		werr := st.Run(ctx)
		cancel()
		return errors.Join(werr, <-done)
	}
	res, syncErr := col.Once(ctx)
	sourceDone(p)
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
	left := leftBehind(context.WithoutCancel(ctx), p)
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
