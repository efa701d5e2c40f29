package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer"
)

// Renderer turns one change event into a BOM; *transformer.Renderer satisfies it.
//
// Render must be deterministic (the same event gives the same bytes), must
// not block on the network, and must be safe for concurrent use. Its errors
// are taken as permanent (the event is dead-lettered): rendering the same
// event again gives the same error. Errors must not carry secrets.
type Renderer interface {
	Render(ev schemas.WorkloadChange) (transformer.Result, error)
}

// Config tunes the stage: the consume engine's settings (durable consumer,
// in-flight bound, concurrency, timeouts, retries). The zero value is usable.
type Config struct {
	stream.EngineConfig `yaml:",inline"`
}

// Defaults of the zero Config.
const (
	DefaultDurable = "transformer"
	DefaultStage   = "transformer"
	// DefaultMaxAttempts bounds the retries of a publish that keeps failing
	// (BOMS full, say) before the event is dead-lettered; it stays on
	// CHANGES for a replay in any case.
	DefaultMaxAttempts = 10
)

// Validate names the field of every problem.
func (c Config) Validate() error { return c.EngineConfig.Validate("transformer.service") }

// Service consumes CHANGES and publishes BOMS; see the package comment.
type Service struct {
	bus    *stream.Bus
	render Renderer
	eng    *stream.Engine
	log    *zap.Logger
	m      metrics
}

// New checks cfg and registers the metrics on reg (nil registers none).
// Nothing touches the server before Run.
func New(bus *stream.Bus, r Renderer, cfg Config, log *zap.Logger, reg prometheus.Registerer) (*Service, error) {
	if bus == nil || r == nil {
		return nil, errors.New("transformer service: bus and renderer are required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &Service{bus: bus, render: r, log: log, m: newMetrics()}
	ec := cfg.EngineConfig
	ec.Stage = DefaultStage
	ec.Stream = schemas.StreamChanges
	if ec.Durable == "" {
		ec.Durable = DefaultDurable
	}
	ec.Filter = schemas.SubjectChangesPrefix + ">"
	ec.Description = "bomstream transformer: renders CHANGES into BOMS"
	if ec.MaxAttempts == 0 {
		ec.MaxAttempts = DefaultMaxAttempts
	}
	eng, err := bus.NewEngine(ec, s.handle, log, reg)
	if err != nil {
		return nil, fmt.Errorf("transformer: %w", err)
	}
	s.eng = eng
	if reg != nil {
		if err := s.m.register(reg); err != nil {
			return nil, fmt.Errorf("transformer metrics: %w", err)
		}
	}
	return s, nil
}

// Run consumes until ctx is done; see stream.Engine.Run.
func (s *Service) Run(ctx context.Context) error { return s.eng.Run(ctx) }

// Health reports the stage's state.
func (s *Service) Health() stream.Health { return s.eng.Health() }

// Durable is the name of the stage's consumer on CHANGES.
func (s *Service) Durable() string { return s.eng.Config().Durable }

// handle renders one change event and publishes its outcome to BOMS. The
// engine calls it for one workload at a time, in CHANGES order, so every
// publish of a workload is acked before its next event is handled.
func (s *Service) handle(ctx context.Context, m *stream.Msg) error {
	ev, err := stream.DecodeChange(m.Data)
	if err != nil {
		return stream.Permanent(fmt.Errorf("parse change event at seq %d: %w", m.Seq, err))
	}
	w := ev.Data.Workload
	if w.Cluster == "" || w.UID == "" || w.Kind == "" || w.Name == "" {
		return stream.Permanent(fmt.Errorf("change event %q at seq %d: workload identity incomplete", ev.ID, m.Seq))
	}
	subject := schemas.BOMsSubject(w)
	if m.Redelivered {
		// An earlier holder may have published before it was lost; the
		// message id only protects within the duplicate window.
		last, err := s.lastOutcome(ctx, subject)
		if err != nil {
			return err
		}
		if last.changeSeq >= m.Seq {
			s.m.skipped.WithLabelValues("already-published").Inc()
			return nil
		}
	}
	if ev.IsTombstone() {
		if err := s.publishTombstone(ctx, w, m.Seq, ev.Time, schemas.TombstoneDeleted); err != nil {
			return err
		}
		s.m.tombstones.WithLabelValues(schemas.TombstoneDeleted).Inc()
		return nil
	}
	res, err := s.renderSafely(ev)
	if err != nil {
		return stream.Permanent(fmt.Errorf("render %s: %w", w, err))
	}
	if res.BOM == nil {
		return s.notServing(ctx, w, subject, m.Seq, ev.Time, res.Skipped)
	}
	hash := schemas.BomHash(res.BOM)
	if res.BomHash != "" && res.BomHash != hash {
		return stream.Permanent(fmt.Errorf("render %s: result bomHash %s does not match its bytes (%s)", w, res.BomHash, hash))
	}
	out := nats.NewMsg(subject)
	out.Data = res.BOM
	out.Header.Set(schemas.HeaderBomHash, hash)
	out.Header.Set(schemas.HeaderInputHash, ev.Data.InputHash)
	out.Header.Set(schemas.HeaderChangeSeq, strconv.FormatUint(m.Seq, 10))
	out.Header.Set(schemas.HeaderWorkload, schemas.WorkloadHeader(w))
	out.Header.Set(schemas.HeaderEventTime, ev.Time.UTC().Format(time.RFC3339Nano))
	if ev.Data.Inputs != nil && len(ev.Data.Inputs.Digests) > 0 {
		imgs := ev.Data.Inputs.Digests
		out.Header.Set(schemas.HeaderImages, schemas.ImagesHeader(imgs))
	}
	if _, err := s.bus.Publish(ctx, out, schemas.BOMMsgID(w, m.Seq)); err != nil {
		return fmt.Errorf("publish bom of %s: %w", w, err)
	}
	s.m.rendered.Inc()
	return nil
}

// notServing handles an event whose inputs render no BOM: when the
// workload's last message on BOMS is a BOM, its AI-BOM is no longer current
// and a not-serving tombstone says so; otherwise (never serving, or already
// tombstoned) there is nothing to publish.
func (s *Service) notServing(ctx context.Context, w schemas.Workload, subject string, changeSeq uint64, at time.Time, why string) error {
	last, err := s.lastOutcome(ctx, subject)
	if err != nil {
		return err
	}
	if !last.serving {
		s.m.skipped.WithLabelValues("not-serving").Inc()
		s.log.Debug("no bom for workload", zap.Stringer("workload", w), zap.String("reason", why))
		return nil
	}
	if err := s.publishTombstone(ctx, w, changeSeq, at, schemas.TombstoneNotServing); err != nil {
		return err
	}
	s.m.tombstones.WithLabelValues(schemas.TombstoneNotServing).Inc()
	s.log.Info("workload stopped serving", zap.Stringer("workload", w), zap.String("reason", why))
	return nil
}

// outcome is what BOMS last says of a workload.
type outcome struct {
	changeSeq uint64 // of its last message; 0 when it has none
	serving   bool   // the last message is a BOM, not a tombstone
}

func (s *Service) lastOutcome(ctx context.Context, subject string) (outcome, error) {
	last, err := s.bus.LastMsg(ctx, schemas.StreamBOMs, subject)
	if err != nil || last == nil {
		return outcome{}, err
	}
	seq, _ := strconv.ParseUint(last.Header.Get(schemas.HeaderChangeSeq), 10, 64)
	return outcome{changeSeq: seq, serving: last.Header.Get(schemas.HeaderTombstone) != "true"}, nil
}

// renderSafely runs the renderer, timing it and turning a panic into an error.
func (s *Service) renderSafely(ev schemas.WorkloadChange) (res transformer.Result, err error) {
	start := time.Now()
	defer func() {
		s.m.renderSeconds.Observe(time.Since(start).Seconds())
		if p := recover(); p != nil {
			err = fmt.Errorf("renderer panicked: %v", p)
		}
	}()
	return s.render.Render(ev)
}

func (s *Service) publishTombstone(ctx context.Context, w schemas.Workload, changeSeq uint64, at time.Time, reason string) error {
	body, err := schemas.CanonicalJSON(w)
	if err != nil {
		return stream.Permanent(fmt.Errorf("tombstone of %s: %w", w, err))
	}
	out := nats.NewMsg(schemas.BOMsSubject(w))
	out.Data = body
	out.Header.Set(schemas.HeaderTombstone, "true")
	out.Header.Set(schemas.HeaderTombstoneReason, reason)
	out.Header.Set(schemas.HeaderWorkload, schemas.WorkloadHeader(w))
	out.Header.Set(schemas.HeaderChangeSeq, strconv.FormatUint(changeSeq, 10))
	out.Header.Set(schemas.HeaderEventTime, at.UTC().Format(time.RFC3339Nano))
	if _, err := s.bus.Publish(ctx, out, schemas.BOMMsgID(w, changeSeq)); err != nil {
		return fmt.Errorf("publish tombstone of %s: %w", w, err)
	}
	return nil
}

// Retry puts one dead letter of the transformer back through it: the event
// is rendered and its outcome published as Run would. It returns nil once
// that is done (or was done already); the caller then removes the dead letter.
func (s *Service) Retry(ctx context.Context, d stream.DeadLetter) error {
	m := &stream.Msg{Subject: d.Subject, Header: d.Header, Data: d.Data, Seq: d.Seq, Delivered: d.Delivered + 1, Attempt: 1,
		Redelivered: true, Time: d.Time}
	return s.handle(ctx, m)
}

// Counts is what the stage did so far.
func (s *Service) Counts() stream.Counts { return s.eng.Counts() }
