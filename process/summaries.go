package process

import (
	"sync"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/transformer"
)

// summaries is the renderer of a `run --once` process: it remembers what
// each render of the transformer stage found (by workload uid and input
// hash), so that the summary table at the end renders only what the stage
// did not (an unchanged workload of an earlier run) instead of everything a
// second time.
type summaries struct {
	r  *transformer.Renderer
	mu sync.Mutex
	m  map[summaryKey]summaryOf
}

type summaryKey struct{ uid, inputHash string }

// summaryOf is what the table shows of one render.
type summaryOf struct {
	summary transformer.Summary
	serving bool // it rendered a BOM
}

func newSummaries(r *transformer.Renderer) *summaries {
	return &summaries{r: r, m: map[summaryKey]summaryOf{}}
}

// Render renders ev and remembers its summary.
func (s *summaries) Render(ev schemas.WorkloadChange) (transformer.Result, error) {
	res, err := s.r.Render(ev)
	if err == nil {
		s.mu.Lock()
		s.m[summaryKey{ev.Data.Workload.UID, ev.Data.InputHash}] = summaryOf{res.Summary, res.BOM != nil}
		s.mu.Unlock()
	}
	return res, err
}

// of returns the summary of ev: the one remembered, or a render now.
func (s *summaries) of(ev schemas.WorkloadChange) (summaryOf, error) {
	s.mu.Lock()
	got, ok := s.m[summaryKey{ev.Data.Workload.UID, ev.Data.InputHash}]
	s.mu.Unlock()
	if ok {
		return got, nil
	}
	res, err := s.r.Render(ev)
	return summaryOf{res.Summary, res.BOM != nil}, err
}
