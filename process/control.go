package process

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream/owner"
	"github.com/bomstream/bomstream/transformer/rerender"
)

// A process that owns an embedded store and runs sinks answers the control
// requests of commands that attach to its data directory (replay, dlq
// retry, rerender): the work happens there, where the sinks and their
// ledgers live, never in a second process. Replay, Redrive and Rerender
// call the owner when there is one, and work in this process otherwise.

// ReplayRequest asks for `bomstream replay`.
type ReplayRequest struct {
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

// RetryRequest asks for `bomstream dlq retry`: the dead letters of the
// given stages, or with the given ids.
type RetryRequest struct {
	Stages []string `json:"stages,omitempty"`
	IDs    []uint64 `json:"ids,omitempty"`
}

// RetryResult counts what a retry did.
type RetryResult struct {
	Done, Failed int
}

// rerenderRequest asks the data directory's owner for a pass.
type rerenderRequest struct {
	DryRun bool `json:"dryRun,omitempty"`
}

// serveControl answers control requests until ctx is done.
func serveControl(ctx context.Context, p *Pipeline) {
	for name, h := range map[string]owner.Handler{
		"replay": func(ctx context.Context, b []byte, progress func([]byte)) ([]byte, error) {
			return controlReplay(ctx, p, b, progress)
		},
		"dlq-retry": func(ctx context.Context, b []byte, progress func([]byte)) ([]byte, error) {
			return controlRetry(ctx, p, b, progress)
		},
		"rerender": func(ctx context.Context, b []byte, _ func([]byte)) ([]byte, error) { return controlRerender(ctx, p, b) },
	} {
		go func() {
			if err := p.bus.Control().Serve(ctx, name, h); err != nil {
				p.log.Warn("control requests", zap.String("request", name), zap.Error(err))
			}
		}()
	}
}

// Replay replays BOMS into the sink req names, through the process that
// owns the data directory when there is one, and reports its progress.
func Replay(ctx context.Context, p *Pipeline, req ReplayRequest, report runner.Progress) (runner.Stats, error) {
	if !p.bus.ViaOwner() {
		return p.sinks[0].runner.Replay(ctx, runner.ReplayOptions{StartSeq: req.StartSeq, StartTime: req.StartTime, IgnoreLedger: req.IgnoreLedger}, report)
	}
	body, _ := json.Marshal(req)
	raw, err := p.bus.Control().Call(ctx, "replay", body, func(b []byte) {
		var pr replayProgress
		if json.Unmarshal(b, &pr) == nil {
			report(pr.Done, pr.Total, pr.Rate)
		}
	})
	var st runner.Stats
	if err != nil {
		return st, fmt.Errorf("replay through the process that owns the data directory: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("replay: %w", err)
	}
	return st, nil
}

func controlReplay(ctx context.Context, p *Pipeline, body []byte, progress func([]byte)) ([]byte, error) {
	var req ReplayRequest
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

// Redrive puts the dead letters req names back through their stage (dlq
// retry), in the process that owns the data directory when there is one;
// report gets a line per dead letter.
func Redrive(ctx context.Context, p *Pipeline, req RetryRequest, report func(string)) (RetryResult, error) {
	if !p.bus.ViaOwner() {
		return retryDeadLetters(ctx, p, req, report)
	}
	var res RetryResult
	body, _ := json.Marshal(req)
	raw, err := p.bus.Control().Call(ctx, "dlq-retry", body, func(line []byte) { report(string(line)) })
	if err != nil {
		return res, fmt.Errorf("dlq retry through the process that owns the data directory: %w", err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return res, fmt.Errorf("dlq retry: %w", err)
	}
	return res, nil
}

func controlRetry(ctx context.Context, p *Pipeline, body []byte, progress func([]byte)) ([]byte, error) {
	var req RetryRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("retry request: %w", err)
	}
	res, err := retryDeadLetters(ctx, p, req, func(line string) { progress([]byte(line)) })
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// Rerender renders every workload's current state again (bomstream
// rerender), in the process that owns the data directory when there is one.
func Rerender(ctx context.Context, p *Pipeline, dryRun bool) (rerender.Report, error) {
	if !p.bus.ViaOwner() {
		return rerenderPass(ctx, p, dryRun)
	}
	body, _ := json.Marshal(rerenderRequest{DryRun: dryRun})
	var rep rerender.Report
	raw, err := p.bus.Control().Call(ctx, "rerender", body, func([]byte) {})
	if err != nil {
		return rep, fmt.Errorf("rerender through the process that owns the data directory: %w", err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, fmt.Errorf("rerender: %w", err)
	}
	return rep, nil
}

func controlRerender(ctx context.Context, p *Pipeline, body []byte) ([]byte, error) {
	var req rerenderRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("rerender request: %w", err)
	}
	if p.svc == nil {
		return nil, fmt.Errorf("the process that owns the data directory runs no transformer")
	}
	p.log.Info("rerender requested", zap.Bool("dryRun", req.DryRun))
	rep, err := rerenderPass(ctx, p, req.DryRun)
	if err != nil {
		return nil, err
	}
	return json.Marshal(rep)
}
