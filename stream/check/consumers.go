package check

import (
	"context"
	"fmt"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/ledger"
)

// consumers finds consumers past their stream's end, a transformer that
// lost its state, and messages left unsettled.
func (s *scan) consumers(context.Context) error {
	r := s.r
	var maxChange uint64
	for seq := range s.outcomes {
		maxChange = max(maxChange, seq)
	}
	for _, cs := range r.Consumers {
		st := r.Changes
		if cs.Stream == schemas.StreamBOMs {
			st = r.BOMs
		}
		area := "consumer " + cs.Name
		transformer := cs.Stream == schemas.StreamChanges && cs.Name == s.c.cfg.TransformerDurable
		recreate := func(ctx context.Context) (int, error) {
			return 1, s.c.bus.Durables().Delete(ctx, cs.Stream, cs.Name)
		}
		switch {
		case cs.Delivered > st.LastSeq && transformer:
			r.add(Finding{Severity: Problem, Area: area, Text: fmt.Sprintf("delivered up to %d, past the last sequence of CHANGES (%d): it would skip the next %d changes", cs.Delivered, st.LastSeq, cs.Delivered-st.LastSeq),
				Fix: "delete it: the transformer creates it again over CHANGES and skips every change whose outcome BOMS holds", fix: recreate})
		case cs.Delivered > st.LastSeq && cs.Stream == schemas.StreamBOMs:
			to := min(cs.AckFloor, st.LastSeq) + 1
			r.add(Finding{Severity: Problem, Area: area, Text: fmt.Sprintf("delivered up to %d, past the last sequence of BOMS (%d): it would skip the next %d messages", cs.Delivered, st.LastSeq, cs.Delivered-st.LastSeq),
				Fix: fmt.Sprintf("reset it to sequence %d; the sink's ledger skips what it applied", to), fix: s.reset(cs, to)})
		case cs.Delivered > st.LastSeq:
			r.add(Finding{Severity: Problem, Area: area, Text: fmt.Sprintf("delivered up to %d, past the last sequence of %s (%d); not a bomstream stage's consumer, so left alone", cs.Delivered, cs.Stream, st.LastSeq)})
		case transformer && cs.Delivered < maxChange:
			r.add(Finding{Severity: Problem, Area: area, Text: fmt.Sprintf("delivered up to %d, but BOMS holds outcomes of changes up to %d: its state was lost, and it would render and publish them again", cs.Delivered, maxChange),
				Fix: "delete it: the transformer creates it again over CHANGES and skips every change whose outcome BOMS holds", fix: recreate})
		}
		if cs.AckPending > 0 {
			r.add(Finding{Severity: Note, Area: area, Text: fmt.Sprintf("%d messages delivered and not settled (ack floor %d): a stage holds them, or a stopped process left them and its successor takes them again from the ack floor", cs.AckPending, cs.AckFloor)})
		}
	}
	return nil
}

// reset is the fix that moves a consumer to seq.
func (s *scan) reset(cs stream.ConsumerState, seq uint64) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		return 1, s.c.bus.Durables().Reset(ctx, cs.Stream, cs.Name, seq)
	}
}

// ledgers holds each sink's ledger against BOMS.
func (s *scan) ledgers(ctx context.Context) error {
	r := s.r
	sinks, err := ledger.Names(ctx, s.c.bus)
	if err != nil {
		return err
	}
	lost := map[uint64]bool{}
	for _, m := range s.missing {
		lost[m.seq] = true
	}
	for _, sink := range sinks {
		entries, bad, err := s.c.cfg.Ledgers.ReadLedger(ctx, sink)
		if err != nil {
			return err
		}
		r.Ledgers = append(r.Ledgers, Ledger{Sink: sink, Entries: len(entries)})
		area := "sink " + sink
		applied := map[string]uint64{}
		var restored, unknown []string
		for _, a := range entries {
			subj := schemas.SubjectBOMsPrefix + a.Cluster + "." + a.UID
			applied[subj] = a.ChangeSeq
			if o, ok := s.outcomes[a.ChangeSeq]; ok && o.subject == subj {
				continue
			}
			if lost[a.ChangeSeq] {
				restored = append(restored, a.Workload)
			} else {
				unknown = append(unknown, a.Workload)
			}
		}
		if len(bad) > 0 {
			r.add(Finding{Severity: Note, Area: area, Text: fmt.Sprintf("%d ledger entries cannot be read (%s); the runner rewrites each when its workload next comes by", len(bad), list(bad))})
		}
		if len(restored) > 0 {
			r.add(Finding{Severity: Note, Area: area, Text: fmt.Sprintf("the ledger records %d versions whose outcome BOMS lost; the repair of BOMS puts them back", len(restored)), Workloads: restored})
		}
		if len(unknown) > 0 {
			r.add(Finding{Severity: Problem, Area: area,
				Text:      fmt.Sprintf("the ledger records %d versions that BOMS does not hold and CHANGES cannot rebuild: the sink holds them, no stream does (`bomstream replay --sink %s --ignore-ledger` rewrites the sink from BOMS)", len(unknown), sink),
				Workloads: unknown})
		}
		s.behind(sink, applied)
	}
	return nil
}

// behind finds the workloads whose latest outcome the sink's consumer went
// past without its ledger recording it (nor the dead-letter stream).
func (s *scan) behind(sink string, applied map[string]uint64) {
	r := s.r
	cs := r.consumer(schemas.StreamBOMs, s.c.cfg.SinkDurable(sink))
	if cs == nil || !cs.FromStart {
		return
	}
	dlq := s.dlq[schemas.SinkStage(sink)]
	var names []string
	var from uint64
	for subj, change := range s.latest {
		o := s.outcomes[change]
		if o.streamSeq > cs.AckFloor || dlq[o.streamSeq] || applied[subj] >= change {
			continue
		}
		names = append(names, o.workload)
		if from == 0 || o.streamSeq < from {
			from = o.streamSeq
		}
	}
	if len(names) == 0 {
		return
	}
	r.add(Finding{Severity: Problem, Area: "sink " + sink,
		Text:      fmt.Sprintf("its consumer went past the latest outcome of %d workloads (ack floor %d) and its ledger does not record them: the ledger lost entries, or the sink never applied them", len(names), cs.AckFloor),
		Workloads: names,
		Fix:       fmt.Sprintf("reset consumer %s to BOMS sequence %d; the ledger skips what the sink applied", cs.Name, from),
		fix:       s.reset(*cs, from)})
}
