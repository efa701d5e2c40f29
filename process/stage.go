package process

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/engine"
	"github.com/bomstream/bomstream/transformer/service"
)

// A Stage is one part of the process that works until its context ends:
// the collector source, the transformer, the findings stage, a sink's
// runner. The supervisor runs the consuming stages from a table, by name.
type Stage interface {
	// Name is the stage's name as its dead letters carry it:
	// schemas.StageTransformer, schemas.StageFindings,
	// schemas.SinkStage(sink), or "collector".
	Name() string
	// Run works until ctx ends. It returns early only on a failure, which
	// the supervisor answers with a restart after a backoff.
	Run(ctx context.Context) error
	// Health is the stage's own report for /readyz; safe for concurrent
	// use.
	Health() engine.Health
}

// A Redriver is a stage that consumes a stream and takes its dead letters
// back (bomstream dlq retry). Retry puts d through the stage's handler
// once, as the engine would (engine.Redriven says how it went).
type Redriver interface {
	Stage
	Retry(ctx context.Context, d deadletter.Letter) (engine.Redriven, error)
}

// consumer is a stage whose durable consumer a drain waits for.
type consumer interface {
	// consumes names the stream and durable it reads; ok is false when it
	// reads none of its own (the findings stage inline).
	consumes() (streamName, durable string, ok bool)
}

// transformerStage is the CHANGES -> BOMS loop (package transformer/service).
type transformerStage struct{ *service.Service }

func (transformerStage) Name() string { return schemas.StageTransformer }

func (s transformerStage) consumes() (string, string, bool) {
	return schemas.StreamChanges, s.Durable(), true
}

// sinkStage is one sink and its runner (package sinks/runner).
type sinkStage struct {
	cfg    SinkConfig
	sink   sinks.Sink
	runner *runner.Runner
}

func (s *sinkStage) Name() string                  { return schemas.SinkStage(s.cfg.Name) }
func (s *sinkStage) Run(ctx context.Context) error { return s.runner.Run(ctx) }
func (s *sinkStage) Health() engine.Health         { return s.runner.Health() }

func (s *sinkStage) Retry(ctx context.Context, d deadletter.Letter) (engine.Redriven, error) {
	return s.runner.Retry(ctx, d)
}

func (s *sinkStage) consumes() (string, string, bool) {
	return schemas.StreamBOMs, s.runner.Durable(), true
}

// findingsStage is the findings stage (package findings): a
// consumer of BOMS, or inline, following the transformer of this process,
// whose health it then shares.
type findingsStage struct {
	*findings.Stage
	inline *service.Service // nil: it consumes BOMS
}

func (findingsStage) Name() string { return schemas.StageFindings }

func (s findingsStage) Run(ctx context.Context) error {
	if s.inline != nil {
		return s.Stage.RunInline(ctx)
	}
	return s.Stage.Run(ctx)
}

func (s findingsStage) Health() engine.Health {
	if s.inline != nil {
		return s.inline.Health()
	}
	return s.Stage.Health()
}

func (s findingsStage) consumes() (string, string, bool) {
	return schemas.StreamBOMs, s.Durable(), s.inline == nil
}

// collectorStage is the cluster source (package collector/kube). It is run
// by the command's flow, not supervised: its end ends the process.
type collectorStage struct{ *kube.Collector }

func (collectorStage) Name() string { return "collector" }

// Health is degraded, naming the kinds and why, while some kinds cannot
// be watched.
func (c collectorStage) Health() engine.Health {
	report := c.Collector.Health()
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

// label names a stage in logs and on /readyz: "sink NAME" for a sink.
func label(s Stage) string {
	if name, ok := schemas.SinkOfStage(s.Name()); ok {
		return "sink " + name
	}
	return s.Name()
}

// stages is the table of the consuming stages this pipeline runs, in the
// order they start: the transformer, the sinks, the findings stage.
func (p *Pipeline) stages() []Stage {
	var out []Stage
	if p.svc != nil {
		out = append(out, transformerStage{p.svc})
	}
	for _, s := range p.sinks {
		out = append(out, s)
	}
	if p.findings != nil {
		fs := findingsStage{Stage: p.findings}
		if p.findingsInline {
			fs.inline = p.svc
		}
		out = append(out, fs)
	}
	return out
}

// stage is the stage of the table named name, or nil.
func (p *Pipeline) stage(name string) Stage {
	for _, s := range p.stages() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// NamedLocator is a configured sink that can say where it holds a version.
type NamedLocator struct {
	Name    string
	Locator sinks.Locator
}

// Locators are the configured sinks that say where they hold a version
// (sinks.Locator): the pipeline's own, or when it runs none (web, find),
// sinks built from the configuration and never run, closed by Close. A
// Locate does no I/O.
func (p *Pipeline) Locators(ctx context.Context) ([]NamedLocator, error) {
	var locs []NamedLocator
	for _, st := range p.sinks {
		if l, ok := st.sink.(sinks.Locator); ok {
			locs = append(locs, NamedLocator{st.cfg.Name, l})
		}
	}
	if len(p.sinks) > 0 || p.env.Sinks == nil {
		return locs, nil
	}
	reg := p.env.Sinks
	for _, sc := range p.cfg.Sinks {
		scfg, err := reg.Decode(sc.Type, sc.Config)
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", sc.Name, err)
		}
		s, err := reg.New(ctx, sc.Type, sc.Name, scfg, sinks.Deps{Log: p.log.Named("sink"), Getenv: p.env.Getenv, SpecVersion: sc.SpecVersion})
		if err != nil {
			p.log.Warn("sink not located", zap.String("sink", sc.Name), zap.Error(err))
			continue
		}
		p.closers = append(p.closers, s.Close)
		if l, ok := s.(sinks.Locator); ok {
			locs = append(locs, NamedLocator{sc.Name, l})
		}
	}
	return locs, nil
}

// sink is the stage of the sink named name, nil when none runs here.
func (p *Pipeline) sink(name string) *sinkStage {
	for _, s := range p.sinks {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

// sinkList names the sinks that run here, for errors: "a, b", or "none".
func (p *Pipeline) sinkList() string {
	var names []string
	for _, s := range p.sinks {
		names = append(names, s.cfg.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
