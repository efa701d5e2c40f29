package process

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/findings"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/owner"
	"github.com/bomstream/bomstream/transformer"
	"github.com/bomstream/bomstream/transformer/service"
)

// Parts says which parts of the pipeline a process runs.
type Parts struct {
	Source      bool     // the manifest source (needs cfg.Manifests.Dir)
	Transformer bool     // the CHANGES -> BOMS loop
	Sinks       []string // names of the sinks to run; nil = none, ["*"] = all
	DryRun      bool     // sinks log what they would write and write nothing
	// Attach: the command reads, or asks the data directory's owner to act
	// (history, get, replay, dlq). It never creates the data directory, and
	// when another process owns it, it works through that process and
	// builds no sink of its own.
	Attach bool
	// Findings: the process runs the findings stage (unless
	// findings.disabled), a consumer of BOMS as a sink is.
	Findings bool
	// Summary: the process prints the summary table at its end (run
	// --once); the transformer stage remembers what it rendered for it.
	Summary bool
	// API: the process serves the inventory API when configured (run, sink).
	API bool
}

// Pipeline is one process's share of bomstream, wired from a validated
// Config: the stages it runs, and the bus they share.
type Pipeline struct {
	cfg      Config
	log      *zap.Logger
	obs      *observer
	bus      *stream.Bus
	norm     *collector.Normalizer
	renderer *transformer.Renderer
	rendered *summaries // set when Parts.Summary: what the stage rendered
	svc      *service.Service
	sinks    []*sinkStage
	findings *findings.Stage // nil when the process runs no findings stage
	// findingsInline: the findings stage follows this process's
	// transformer (service.Follower) rather than consuming BOMS.
	findingsInline bool
	// FindingsIndex is every finding's state, followed from FINDINGS, when
	// the process serves the API (the findings API and the web pages). The
	// API's wiring sets it; nil otherwise.
	FindingsIndex *stored.Index
	// env builds sinks that are located, not run (Locators); closers
	// close them.
	env     Env
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

// New validates cfg, opens the bus and builds the parts asked for, with
// env's sink types. Nothing runs until Run is called; Close closes it.
func New(ctx context.Context, cfg Config, parts Parts, env Env, log *zap.Logger) (*Pipeline, error) {
	return newPipeline(ctx, cfg, parts, env, log, newObserver())
}

func newPipeline(ctx context.Context, cfg Config, st Parts, env Env, log *zap.Logger, obs *observer) (*Pipeline, error) {
	reg := env.Sinks
	cfg = withDefaultSinks(cfg)
	if err := cfg.Validate(reg); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	p := &Pipeline{cfg: cfg, log: log, obs: obs, env: env}
	var err error
	// Only the stages that run get built: a sink, history or get process
	// compiles no kind profiles and no detection rules.
	if st.Source {
		if p.norm, err = collector.NewNormalizer(cfg.normalizerConfig()); err != nil {
			return nil, err
		}
	}
	if st.Source || st.Transformer {
		rc := cfg.rendererConfig()
		rc.Facts = st.Transformer && st.Findings && !cfg.Findings.Disabled // read inline (findingsInline)
		if p.renderer, err = transformer.NewRenderer(rc); err != nil {
			return nil, err
		}
	}
	selected, err := selectSinks(cfg.Sinks, st.Sinks)
	if err != nil {
		return nil, err
	}
	open := stream.Open
	if st.Attach {
		open = stream.Attach
	}
	if p.bus, err = open(ctx, cfg.Stream, log.Named("stream")); err != nil {
		return nil, err
	}
	// An embedded server that no other process can reach: whoever held the
	// consumers before was this process's dead predecessor.
	claim := p.bus.Embedded() && cfg.Stream.Listen == ""
	cfg.Transformer.Service.Claim = claim
	if st.Transformer {
		// Built, not run, when the owner runs the stages: a command may
		// render with it (check) or hand it a dead letter (dlq retry).
		var r service.Renderer = p.renderer
		if st.Summary {
			p.rendered = newSummaries(p.renderer)
			r = p.rendered
		}
		if p.svc, err = service.New(p.bus, r, cfg.Transformer.Service, log.Named("transformer"), obs.reg); err != nil {
			p.Close()
			return nil, err
		}
		if !st.Attach {
			p.rerendered = make(chan struct{}) // the stage runs here: re-render at start
		}
		if st.Source {
			p.sourcePassed = make(chan struct{})
		}
	}
	if p.bus.ViaOwner() {
		return p, nil // the owner runs the sinks
	}
	if err := p.newConsumers(ctx, selected, st, claim); err != nil {
		p.Close()
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
func (p *Pipeline) newConsumers(ctx context.Context, selected []SinkConfig, st Parts, claim bool) error {
	reg, getenv := p.env.Sinks, p.env.Getenv
	if st.Findings && !p.cfg.Findings.Disabled {
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
		if st.DryRun {
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
	var s strings.Builder
	for i, c := range all {
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(c.Name)
	}
	return s.String()
}

// Run runs the pipeline's stages until ctx is done, each under its own
// supervisor: a stage that fails is restarted with backoff while the
// others go on, and /readyz reports each one.
func (p *Pipeline) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if p.bus.Embedded() {
		serveControl(ctx, p) // for replay and dlq retry from other processes
	}
	if p.svc != nil {
		startRerender(ctx, p)
		wg.Go(func() { // CHANGES keeps every last event
			owner.KeepRetention(ctx, p.bus, p.bus.Reader(), p.cfg.Stream.MaxAge, p.log.Named("retention"))
		})
	}
	for _, s := range p.stages() {
		st := p.obs.stage(label(s), s.Health)
		wg.Go(func() {
			supervise(ctx, label(s), s.Run, st, p.log)
		})
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

// waitDrained returns once every consumer of the pipeline has nothing pending
// and nothing unacknowledged, in stage order: first the transformer, so that
// BOMS is complete before the sinks are looked at.
func (p *Pipeline) waitDrained(ctx context.Context) error {
	if p.rerendered != nil { // its events first
		select {
		case <-p.rerendered:
		case <-ctx.Done():
			return fmt.Errorf("wait for the re-render at start: %w", ctx.Err())
		}
	}
	for _, s := range p.stages() {
		c, ok := s.(consumer)
		if !ok {
			continue
		}
		streamName, durable, ok := c.consumes()
		if !ok {
			continue
		}
		if err := p.waitCaughtUp(ctx, streamName, durable); err != nil {
			return err
		}
	}
	return p.rerenderErr
}

// waitCaughtUp returns once durable has nothing pending on streamName.
func (p *Pipeline) waitCaughtUp(ctx context.Context, streamName, durable string) error {
	// Interrupted, it says what is left, whether the interruption came
	// while it waited or while it asked (a canceled request).
	interrupted := func() error {
		return fmt.Errorf("wait for %s to drain%s: %w", durable, p.leftOn(streamName, durable), ctx.Err())
	}
	for {
		done, err := p.bus.Durables().CaughtUp(ctx, streamName, durable)
		if err != nil && ctx.Err() != nil {
			return interrupted()
		}
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return interrupted()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leftOn says how many messages the consumer durable on streamName has
// not settled, for the error of an interrupted drain: " (125 messages of
// BOMS not settled yet, still retried: the log names each one's error)".
func (p *Pipeline) leftOn(streamName, durable string) string {
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

// Watcher is the manifest source over cfg.Manifests.Dir.
func (p *Pipeline) Watcher() *files.Watcher {
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
		OnSync:            func(files.SyncResult, files.Loaded) { sourceDone(p) },
	}
}

// Close closes the sinks and the bus.
func (p *Pipeline) Close() {
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
func (p *Pipeline) newFindings(claim bool) error {
	rules, err := findings.LoadRules(p.cfg.Findings.RulesFile, nil)
	if err != nil {
		return err
	}
	fc := p.cfg.Findings
	fc.Engine.Claim = claim
	p.findings, err = findings.New(p.bus, rules, fc, p.log.Named("findings"), p.obs.reg)
	return err
}

// Bus is the stream connection the pipeline's stages share.
func (p *Pipeline) Bus() *stream.Bus { return p.bus }

// Config is the validated configuration, with the default sinks.
func (p *Pipeline) Config() Config { return p.cfg }

// Log is the process's logger.
func (p *Pipeline) Log() *zap.Logger { return p.log }

// Metrics is the process's metrics registry, served at /metrics.
func (p *Pipeline) Metrics() *prometheus.Registry { return p.obs.reg }

// Findings is the findings stage, built when Parts.Findings asks for it
// and this process runs it; nil otherwise.
func (p *Pipeline) Findings() *findings.Stage { return p.findings }

// SinkStats counts what the runner of the sink named name did in this
// process; the zero Stats when it runs no such sink.
func (p *Pipeline) SinkStats(name string) runner.Stats {
	if s := p.sink(name); s != nil {
		return s.runner.Stats()
	}
	return runner.Stats{}
}
