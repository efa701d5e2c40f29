package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/findings"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/engine"
	"github.com/bomstream/bomstream/transformer"
	"github.com/bomstream/bomstream/transformer/service"

	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/owner"
)

// stages says which parts of the pipeline a process runs.
type stages struct {
	source      bool     // the manifest source (needs cfg.Manifests.Dir)
	transformer bool     // the CHANGES -> BOMS loop
	sinks       []string // names of the sinks to run; nil = none, ["*"] = all
	dryRun      bool     // sinks log what they would write and write nothing
	// attach: the command reads, or asks the data directory's owner to act
	// (history, get, replay, dlq). It never creates the data directory, and
	// when another process owns it, it works through that process and
	// builds no sink of its own.
	attach bool
	// findings: the process runs the findings stage (unless
	// findings.disabled), a consumer of BOMS as a sink is.
	findings bool
	// summary: the process prints the summary table at its end (run
	// --once); the transformer stage remembers what it rendered for it.
	summary bool
	// api: the process serves the inventory API when configured (run, sink).
	api bool
}

// pipeline is one process's share of bomstream, wired from a validated Config.
type pipeline struct {
	cfg      Config
	log      *zap.Logger
	obs      *observer
	bus      *stream.Bus
	norm     *collector.Normalizer
	renderer *transformer.Renderer
	rendered *summaries // set when stages.summary: what the stage rendered
	svc      *service.Service
	sinks    []*sinkStage
	findings *findings.Stage // nil when the process runs no findings stage
	// findingsInline: the findings stage follows this process's
	// transformer (service.Follower) rather than consuming BOMS.
	findingsInline bool
	// findingsIx is every finding's state, followed from FINDINGS, when
	// the process serves the API (the findings API and the web pages).
	findingsIx *stored.Index
	// reg and getenv build sinks that are located, not run (web.go);
	// closers close them.
	reg     sinks.Registry
	getenv  func(string) string
	closers []func() error
	// rerendered is closed when the re-render at start is done (nil: the
	// process makes none); rerenderErr is its failure (rerender.go).
	rerendered  chan struct{}
	rerenderErr error
	// sourcePassed is closed after the source's first pass (nil: the
	// process runs no source); the re-render waits for it (rerender.go).
	sourcePassed chan struct{}
	sourceOnce   sync.Once
}

type sinkStage struct {
	cfg    SinkConfig
	sink   sinks.Sink
	runner *runner.Runner
}

// newPipeline validates cfg, opens the bus and builds the stages asked for.
// Nothing runs until run is called.
func newPipeline(ctx context.Context, cfg Config, st stages, reg sinks.Registry, getenv func(string) string, log *zap.Logger, obs *observer) (*pipeline, error) {
	cfg = withDefaultSinks(cfg)
	if err := cfg.Validate(reg); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	p := &pipeline{cfg: cfg, log: log, obs: obs, reg: reg, getenv: getenv}
	var err error
	// Only the stages that run get built: a sink, history or get process
	// compiles no kind profiles and no detection rules.
	if st.source {
		if p.norm, err = collector.NewNormalizer(cfg.normalizerConfig()); err != nil {
			return nil, err
		}
	}
	if st.source || st.transformer {
		rc := cfg.rendererConfig()
		rc.Facts = st.transformer && st.findings && !cfg.Findings.Disabled // read inline (findingsInline)
		if p.renderer, err = transformer.NewRenderer(rc); err != nil {
			return nil, err
		}
	}
	selected, err := selectSinks(cfg.Sinks, st.sinks)
	if err != nil {
		return nil, err
	}
	open := stream.Open
	if st.attach {
		open = stream.Attach
	}
	if p.bus, err = open(ctx, cfg.Stream, log.Named("stream")); err != nil {
		return nil, err
	}
	// An embedded server that no other process can reach: whoever held the
	// consumers before was this process's dead predecessor.
	claim := p.bus.Embedded() && cfg.Stream.Listen == ""
	cfg.Transformer.Service.Claim = claim
	if st.transformer {
		// Built, not run, when the owner runs the stages: a command may
		// render with it (check) or hand it a dead letter (dlq retry).
		var r service.Renderer = p.renderer
		if st.summary {
			p.rendered = newSummaries(p.renderer)
			r = p.rendered
		}
		if p.svc, err = service.New(p.bus, r, cfg.Transformer.Service, log.Named("transformer"), obs.reg); err != nil {
			p.close()
			return nil, err
		}
		if !st.attach {
			p.rerendered = make(chan struct{}) // the stage runs here: re-render at start
		}
		if st.source {
			p.sourcePassed = make(chan struct{})
		}
	}
	if p.bus.ViaOwner() {
		return p, nil // the owner runs the sinks
	}
	if err := p.newConsumers(ctx, selected, st, reg, getenv, claim); err != nil {
		p.close()
		return nil, err
	}
	if p.svc != nil && p.findings != nil {
		// The BOMs are evaluated as they are stored, in the same step:
		// no consumer of BOMS and no decode of each message for it.
		p.svc.Follow(p.findings)
		p.findingsInline = true
	}
	return p, nil
}

// newConsumers builds the consumers of BOMS the process runs: the findings
// stage when asked for, and the selected sinks.
func (p *pipeline) newConsumers(ctx context.Context, selected []SinkConfig, st stages, reg sinks.Registry, getenv func(string) string, claim bool) error {
	if st.findings && !p.cfg.Findings.Disabled {
		if err := p.newFindings(claim); err != nil {
			return err
		}
	}
	for _, sc := range selected {
		scfg, err := reg.Decode(sc.Type, sc.Config)
		if err != nil { // Validate decoded it already
			return fmt.Errorf("sinks %s: %w", sc.Name, err)
		}
		s, err := reg.New(ctx, sc.Type, sc.Name, scfg, sinks.Deps{Log: p.log.Named("sink"), Metrics: p.obs.reg, Getenv: getenv, SpecVersion: sc.SpecVersion})
		if err != nil {
			return err
		}
		if st.dryRun {
			s = sinks.DryRun(s, p.log.Named("sink"))
		}
		if sc.Runner.Concurrency == 0 {
			sc.Runner.Concurrency = reg[sc.Type].Concurrency
		}
		stage := &sinkStage{cfg: sc, sink: s}
		p.sinks = append(p.sinks, stage)
		rc := sc.Runner
		rc.Claim = claim
		if stage.runner, err = runner.New(p.bus, s, rc, reg[sc.Type].LatestOnly, p.log.Named("sink"), p.obs.reg); err != nil {
			return err
		}
	}
	return nil
}

func selectSinks(all []SinkConfig, names []string) ([]SinkConfig, error) {
	if len(names) == 1 && names[0] == "*" {
		return all, nil
	}
	var out []SinkConfig
	for _, n := range names {
		found := false
		for _, s := range all {
			if s.Name == n {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("sink %q is not configured (configured: %s)", n, sinkNames(all))
		}
	}
	return out, nil
}

func sinkNames(all []SinkConfig) string {
	s := ""
	for i, c := range all {
		if i > 0 {
			s += ", "
		}
		s += c.Name
	}
	return s
}

// run runs the transformer and sink stages until ctx is done, each under
// its own supervisor: a stage that fails is restarted with backoff while the
// others go on, and /readyz reports each one.
func (p *pipeline) run(ctx context.Context) error {
	var wg sync.WaitGroup
	start := func(name string, run func(context.Context) error, health func() engine.Health) {
		st := p.obs.stage(name, health)
		wg.Add(1)
		go func() {
			defer wg.Done()
			supervise(ctx, name, run, st, p.log)
		}()
	}
	if p.bus.Embedded() {
		p.serveControl(ctx) // for replay and dlq retry from other processes
	}
	if p.svc != nil {
		p.startRerender(ctx)
		start(schemas.StageTransformer, p.svc.Run, p.svc.Health)
		wg.Add(1)
		go func() { // CHANGES keeps every last event
			defer wg.Done()
			owner.KeepRetention(ctx, p.bus, p.bus.Reader(), p.cfg.Stream.MaxAge, p.log.Named("retention"))
		}()
	}
	for _, s := range p.sinks {
		start("sink "+s.cfg.Name, s.runner.Run, s.runner.Health)
	}
	switch {
	case p.findingsInline:
		start(schemas.StageFindings, p.findings.RunInline, func() engine.Health { return p.svc.Health() })
	case p.findings != nil:
		start(schemas.StageFindings, p.findings.Run, p.findings.Health)
	}
	wg.Wait()
	return nil
}

// supervise runs a stage until ctx is done, restarting it with backoff
// whenever it returns early or panics; meanwhile st reports it down.
func supervise(ctx context.Context, name string, run func(context.Context) error, st *stageState, log *zap.Logger) {
	log = log.With(zap.String("stage", name))
	for n := 1; ; n++ {
		err := runGuarded(ctx, run)
		if ctx.Err() != nil {
			st.crashed.Store(nil)
			return
		}
		if err == nil {
			err = errors.New("stopped by itself")
		}
		msg := err.Error()
		st.crashed.Store(&msg)
		d := min(time.Duration(1<<min(n-1, 5))*time.Second, 30*time.Second)
		log.Error("stage failed; restarting", zap.Duration("in", d), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		st.crashed.Store(nil)
	}
}

// runGuarded runs a stage, turning a panic into an error.
func runGuarded(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return run(ctx)
}

// consumers are the durable consumers this pipeline's stages read from.
func (p *pipeline) consumers() [][2]string {
	var out [][2]string
	if p.svc != nil {
		out = append(out, [2]string{schemas.StreamChanges, p.svc.Durable()})
	}
	for _, s := range p.sinks {
		out = append(out, [2]string{schemas.StreamBOMs, s.runner.Durable()})
	}
	if p.findings != nil && !p.findingsInline {
		out = append(out, [2]string{schemas.StreamBOMs, p.findings.Durable()})
	}
	return out
}

// waitDrained returns once every consumer of the pipeline has nothing pending
// and nothing unacknowledged, in stage order: first the transformer, so that
// BOMS is complete before the sinks are looked at.
func (p *pipeline) waitDrained(ctx context.Context) error {
	if p.rerendered != nil { // its events first
		select {
		case <-p.rerendered:
		case <-ctx.Done():
			return fmt.Errorf("wait for the re-render at start: %w", ctx.Err())
		}
	}
	for _, c := range p.consumers() {
		// Interrupted, it says what is left, whether the interruption came
		// while it waited or while it asked (a canceled request).
		interrupted := func() error {
			return fmt.Errorf("wait for %s to drain%s: %w", c[1], p.leftOn(c[0], c[1]), ctx.Err())
		}
		for {
			done, err := p.bus.Durables().CaughtUp(ctx, c[0], c[1])
			if err != nil && ctx.Err() != nil {
				return interrupted()
			}
			if err != nil {
				return err
			}
			if done {
				break
			}
			select {
			case <-ctx.Done():
				return interrupted()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return p.rerenderErr
}

// leftOn says how many messages the consumer durable on streamName has
// not settled, for the error of an interrupted drain: " (125 messages of
// BOMS not settled yet, still retried: the log names each one's error)".
func (p *pipeline) leftOn(streamName, durable string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs, err := p.bus.Durables().List(ctx, streamName)
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if n := c.Pending + uint64(c.AckPending); c.Name == durable && n > 0 {
			return fmt.Sprintf(" (%d messages of %s not settled yet, still retried: the log names each one's error)", n, streamName)
		}
	}
	return ""
}

// watcher is the manifest source over cfg.Manifests.Dir.
func (p *pipeline) watcher() *files.Watcher {
	var reg prometheus.Registerer
	if p.obs != nil && p.obs.reg != nil {
		reg = p.obs.reg
	}
	return &files.Watcher{
		Registerer: reg,
		Dir:        p.cfg.Manifests.Dir,
		Cluster:    p.cfg.Cluster,
		Normalizer: p.norm,
		Publisher:  changelog.New(p.bus),
		Limits:     p.cfg.Manifests.limits(),
		Interval:   p.cfg.Manifests.Interval,
		Log:        p.log.Named("manifests"),

		ConfirmTombstones: p.cfg.Manifests.ConfirmTombstones,
		OnSync:            func(files.SyncResult, files.Loaded) { p.sourceDone() },
	}
}

func (p *pipeline) close() {
	for _, c := range p.closers {
		if err := c(); err != nil {
			p.log.Warn("close located sink", zap.Error(err))
		}
	}
	for _, s := range p.sinks {
		if err := s.sink.Close(); err != nil {
			p.log.Warn("close sink", zap.String("sink", s.cfg.Name), zap.Error(err))
		}
	}
	if p.bus != nil {
		p.bus.Close()
	}
}

// withDefaultSinks is cfg with the default sink when none is configured and
// every sink named (by its type when unnamed).
func withDefaultSinks(cfg Config) Config {
	if len(cfg.Sinks) == 0 {
		cfg.Sinks = defaultSinks()
	}
	out := make([]SinkConfig, len(cfg.Sinks))
	copy(out, cfg.Sinks)
	for i := range out {
		if out[i].Name == "" {
			out[i].Name = out[i].Type
		}
	}
	cfg.Sinks = out
	return cfg
}

// newFindings builds the findings stage from the validated configuration.
func (p *pipeline) newFindings(claim bool) error {
	rules, err := findings.LoadRules(p.cfg.Findings.RulesFile, nil)
	if err != nil {
		return err
	}
	fc := p.cfg.Findings
	fc.Engine.Claim = claim
	p.findings, err = findings.New(p.bus, rules, fc, p.log.Named("findings"), p.obs.reg)
	return err
}
