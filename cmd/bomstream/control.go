package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/sinks/runner"

	"github.com/bomstream/bomstream/stream/owner"
)

// A process that owns an embedded store and runs sinks answers the control
// requests of commands that attach to its data directory (replay, dlq
// retry): the work happens here, where the sinks and their ledgers live,
// never in a second process.

// replayRequest asks for `bomstream replay`.
type replayRequest struct {
	Sink         string    `json:"sink"`
	StartSeq     uint64    `json:"startSeq,omitempty"`
	StartTime    time.Time `json:"startTime,omitzero"`
	IgnoreLedger bool      `json:"ignoreLedger,omitempty"`
}

// replayProgress is one progress message of a replay.
type replayProgress struct {
	Done, Total uint64
	Rate        float64
}

// retryRequest asks for `bomstream dlq retry`: the dead letters of the
// given stages, or with the given ids.
type retryRequest struct {
	Stages []string `json:"stages,omitempty"`
	IDs    []uint64 `json:"ids,omitempty"`
}

// serveControl answers control requests until ctx is done.
func (p *pipeline) serveControl(ctx context.Context) {
	for name, h := range map[string]owner.Handler{
		"replay":    p.controlReplay,
		"dlq-retry": p.controlRetry,
		"rerender":  p.controlRerender,
	} {
		go func() {
			if err := p.bus.Control().Serve(ctx, name, h); err != nil {
				p.log.Warn("control requests", zap.String("request", name), zap.Error(err))
			}
		}()
	}
}

func (p *pipeline) controlReplay(ctx context.Context, body []byte, progress func([]byte)) ([]byte, error) {
	var req replayRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("replay request: %w", err)
	}
	s := p.sink(req.Sink)
	if s == nil {
		return nil, fmt.Errorf("sink %q does not run in the process that owns the data directory (it runs: %s)", req.Sink, p.sinkList())
	}
	p.log.Info("replay requested", zap.String("sink", req.Sink))
	st, err := s.runner.Replay(ctx, runner.ReplayOptions{StartSeq: req.StartSeq, StartTime: req.StartTime, IgnoreLedger: req.IgnoreLedger},
		func(done, total uint64, rate float64) {
			b, _ := json.Marshal(replayProgress{done, total, rate})
			progress(b)
		})
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

func (p *pipeline) controlRetry(ctx context.Context, body []byte, progress func([]byte)) ([]byte, error) {
	var req retryRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("retry request: %w", err)
	}
	res, err := p.retryDeadLetters(ctx, req, func(line string) { progress([]byte(line)) })
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (p *pipeline) sink(name string) *sinkStage {
	for _, s := range p.sinks {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

func (p *pipeline) sinkList() string {
	var names []string
	for _, s := range p.sinks {
		names = append(names, s.cfg.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
