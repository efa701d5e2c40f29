package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bomlog"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/engine"
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
	engine.Config `yaml:",inline"`
}

// Defaults of the zero Config.
const (
	DefaultDurable = schemas.StageTransformer
	DefaultStage   = schemas.StageTransformer
	// DefaultMaxAttempts bounds the retries of a publish that keeps failing
	// (BOMS full, say) before the event is dead-lettered; it stays on
	// CHANGES for a replay in any case.
	DefaultMaxAttempts = 10
)

// Validate names the field of every problem.
func (c Config) Validate() error { return c.Config.Validate("transformer.service") }

// Service consumes CHANGES and publishes BOMS; see the package comment.
type Service struct {
	bus    *stream.Bus
	render Renderer
	eng    *engine.Engine
	log    *zap.Logger
	m      metrics
	follow Follower // nil: none
}

// Follower acts on every BOMS message the stage stores, in the same step:
// the stage calls Follow once the message is stored and acks its change
// event only once Follow returns nil. An error retries the event as a
// failed publish would (the message, stored already, is not stored
// again), so Follow must be idempotent; a permanent error
// (engine.Permanent) dead-letters the event. The findings stage follows
// this way when it runs in the same process (findings.Stage.Follow): it
// saves a consumer of BOMS and a decode of every BOM.
type Follower interface {
	Follow(ctx context.Context, m *schemas.BOMMessage) error
}

// Follow makes f follow every message the stage stores; call it before Run.
func (s *Service) Follow(f Follower) { s.follow = f }

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
	ec := cfg.Config
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
	eng, err := engine.New(bus, ec, s.handle, log, reg)
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

// Run consumes until ctx is done; see engine.Engine.Run.
func (s *Service) Run(ctx context.Context) error { return s.eng.Run(ctx) }

// Health reports the stage's state.
func (s *Service) Health() engine.Health { return s.eng.Health() }

// Durable is the name of the stage's consumer on CHANGES.
func (s *Service) Durable() string { return s.eng.Config().Durable }

// handle renders one change event and publishes its outcome to BOMS. The
// engine calls it for one workload at a time, in CHANGES order, so every
// publish of a workload is acked before its next event is handled.
func (s *Service) handle(ctx context.Context, m *engine.Msg) error {
	ev, err := decode(m.Data, m.Seq)
	if err != nil {
		return err
	}
	w := ev.Data.Workload
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
			if last.changeSeq == m.Seq && s.follow != nil {
				// Stored by an earlier attempt that may have stopped
				// before its follower acted.
				return s.follow.Follow(ctx, &last.msg)
			}
			return nil
		}
	}
	bm, err := s.outcome(ev, m.Seq, func() (bool, error) {
		last, err := s.lastOutcome(ctx, subject)
		return last.serving, err
	})
	if err != nil {
		return err
	}
	if bm == nil {
		s.m.skipped.WithLabelValues("not-serving").Inc()
		s.log.Debug("no bom for workload", zap.Stringer("workload", w))
		return nil
	}
	out, err := message(bm)
	if err != nil {
		return err
	}
	if _, err = s.publishAck(ctx, bm, out); err != nil || s.follow == nil {
		return err
	}
	return s.follow.Follow(ctx, bm)
}

// Outcome is the message the stage publishes on BOMS for the change event
// data, stored on CHANGES at changeSeq: its BOM, a tombstone, or nil when
// the event renders no BOM and the workload was not serving before it
// (wasServing: its previous outcome on BOMS is a BOM). The message carries
// every header the stage sets, Nats-Msg-Id schemas.BOMMsgID included, so
// that publishing it again is what the stage did, byte for byte. An event
// that cannot be read or rendered is an error wrapping engine.Permanent.
// It touches no network and is safe for concurrent use.
func (s *Service) Outcome(data []byte, changeSeq uint64, wasServing bool) (*nats.Msg, error) {
	ev, err := decode(data, changeSeq)
	if err != nil {
		return nil, err
	}
	bm, err := s.outcome(ev, changeSeq, func() (bool, error) { return wasServing, nil })
	if bm == nil || err != nil {
		return nil, err
	}
	return message(bm)
}

// Publish stores an outcome on BOMS, as the stage does after Outcome.
// duplicate says BOMS dropped it: it remembers the message id (within its
// duplicate window), whether or not it still holds that message.
func (s *Service) Publish(ctx context.Context, out *nats.Msg) (duplicate bool, err error) {
	m, err := schemas.DecodeBOMMessage(out.Subject, out.Header, out.Data)
	if err != nil {
		return false, fmt.Errorf("publish outcome: %w", err)
	}
	ack, err := s.publishAck(ctx, &m, out)
	return ack.Duplicate, err
}

// decode reads a change event and checks the identity its outcome needs.
func decode(data []byte, seq uint64) (schemas.WorkloadChange, error) {
	ev, err := changelog.Decode(data)
	if err != nil {
		return ev, engine.Permanent(fmt.Errorf("parse change event at seq %d: %w", seq, err))
	}
	w := ev.Data.Workload
	if w.Cluster == "" || w.UID == "" || w.Kind == "" || w.Name == "" {
		return ev, engine.Permanent(fmt.Errorf("change event %q at seq %d: workload identity incomplete", ev.ID, seq))
	}
	return ev, nil
}

// outcome renders ev into its BOMS message, nil when it has none;
// wasServing is asked only when the event renders no BOM (it reads BOMS in
// the stage).
func (s *Service) outcome(ev schemas.WorkloadChange, changeSeq uint64, wasServing func() (bool, error)) (*schemas.BOMMessage, error) {
	w := ev.Data.Workload
	if ev.IsTombstone() {
		return tombstone(w, changeSeq, ev.Time, schemas.TombstoneDeleted)
	}
	res, err := s.renderSafely(ev)
	if err != nil {
		return nil, engine.Permanent(fmt.Errorf("render %s: %w", w, err))
	}
	if res.BOM == nil {
		serving, err := wasServing()
		if err != nil || !serving {
			return nil, err
		}
		s.log.Info("workload stopped serving", zap.Stringer("workload", w), zap.String("reason", res.Skipped))
		return tombstone(w, changeSeq, ev.Time, schemas.TombstoneNotServing)
	}
	hash := schemas.BomHash(res.BOM)
	if res.BomHash != "" && res.BomHash != hash {
		return nil, engine.Permanent(fmt.Errorf("render %s: result bomHash %s does not match its bytes (%s)", w, res.BomHash, hash))
	}
	m := &schemas.BOMMessage{Workload: w, ChangeSeq: changeSeq, EventTime: ev.Time, BomHash: hash, InputHash: ev.Data.InputHash, BOM: res.BOM, Facts: res.Facts}
	if ev.Data.Inputs != nil {
		m.Images = ev.Data.Inputs.Digests
	}
	return m, nil
}

// message is m as a NATS message.
func message(m *schemas.BOMMessage) (*nats.Msg, error) {
	h, body, err := m.Encode()
	if err != nil {
		return nil, engine.Permanent(fmt.Errorf("outcome of %s: %w", m.Workload, err))
	}
	out := nats.NewMsg(m.Subject())
	out.Header, out.Data = h, body
	return out, nil
}

// publishAck stores out, the encoding of m, on BOMS and counts it.
func (s *Service) publishAck(ctx context.Context, m *schemas.BOMMessage, out *nats.Msg) (stream.PubAck, error) {
	what := "bom"
	if m.IsTombstone() {
		what = "tombstone"
	}
	// The id the message carries: a repair may have taken it off.
	ack, err := bomlog.New(s.bus).Append(ctx, out)
	if err != nil {
		return ack, fmt.Errorf("publish %s of %s: %w", what, m.Workload, err)
	}
	if m.IsTombstone() {
		s.m.tombstones.WithLabelValues(m.Tombstone).Inc()
	} else {
		s.m.rendered.Inc()
	}
	return ack, nil
}

// outcome is what BOMS last says of a workload.
type outcome struct {
	changeSeq uint64 // of its last message; 0 when it has none
	serving   bool   // the last message is a BOM, not a tombstone
	msg       schemas.BOMMessage
}

func (s *Service) lastOutcome(ctx context.Context, subject string) (outcome, error) {
	last, ok, err := bomlog.New(s.bus).Last(ctx, subject)
	if err != nil || !ok {
		return outcome{}, err
	}
	m := last.BOMMessage // what it can read of a malformed one
	return outcome{changeSeq: m.ChangeSeq, serving: !m.IsTombstone(), msg: m}, nil
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

// tombstone is the BOMS message saying that w's AI-BOM is no longer current.
func tombstone(w schemas.Workload, changeSeq uint64, at time.Time, reason string) (*schemas.BOMMessage, error) {
	return &schemas.BOMMessage{Workload: w, ChangeSeq: changeSeq, EventTime: at, Tombstone: reason}, nil
}

// Retry puts one dead letter of the transformer back through it: a redrive
// through the stage's engine (see engine.Engine.Redrive); the event is
// rendered and its outcome published as Run would.
func (s *Service) Retry(ctx context.Context, d deadletter.Letter) (engine.Redriven, error) {
	return s.eng.Redrive(ctx, d)
}

// Counts is what the stage did so far.
func (s *Service) Counts() engine.Counts { return s.eng.Counts() }
