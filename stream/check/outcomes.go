package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// transformerStage is the stage name the transformer dead-letters under
// (service.DefaultStage).
const transformerStage = schemas.StageTransformer

// checkOutcomes walks every workload's events in change order and finds the
// ones the transformer handled whose outcome BOMS lacks.
func (s *scan) checkOutcomes(ctx context.Context) error {
	r := s.r
	var handled uint64 // the transformer's ack floor: everything at or below it was handled
	if tc := r.consumer(schemas.StreamChanges, s.c.cfg.TransformerDurable); tc != nil {
		handled = tc.AckFloor
	}
	dlq := s.dlq[transformerStage]
	var unrenderable, deadLettered []string
	pending := 0
	for _, subj := range s.subjects {
		serving := false
		for _, seq := range s.events[subj] {
			r.Checked.Events++
			if o, ok := s.outcomes[seq]; ok && o.subject == subj {
				serving = !o.tombstone
				continue
			}
			due := seq <= handled || seq < s.latest[subj]
			if !due {
				pending++
				continue
			}
			if seq <= s.c.cfg.OtherUpTo {
				continue // another transformer may have rendered it to nothing
			}
			m, err := s.c.bus.Reader().GetMsg(ctx, schemas.StreamChanges, seq)
			if err != nil {
				return err
			}
			if m == nil {
				continue // gone since it was listed (limits)
			}
			out, err := s.c.cfg.Transformer.Outcome(m.Data, seq, serving)
			if err != nil {
				what := fmt.Sprintf("change %d: %v", seq, err)
				if dlq[seq] {
					deadLettered = append(deadLettered, what)
				} else {
					unrenderable = append(unrenderable, what)
				}
				continue
			}
			if out == nil {
				continue // renders no BOM, and none was due
			}
			bm, _ := schemas.DecodeBOMMessage("", out.Header, out.Data)
			name := workloadName(bm.Workload, subj)
			if dlq[seq] {
				deadLettered = append(deadLettered, fmt.Sprintf("change %d of %s", seq, name))
				continue
			}
			s.missing = append(s.missing, missing{subject: subj, seq: seq, wasServing: serving,
				workload: name, interior: seq < s.latest[subj]})
			serving = !bm.IsTombstone()
		}
	}
	s.reportOutcomes(pending, unrenderable, deadLettered)
	return nil
}

// reportOutcomes adds what checkOutcomes found to the report: the missing
// outcomes (with their repair), the outcomes stored twice, the changes that
// wait, and those that cannot be rendered or were dead-lettered.
func (s *scan) reportOutcomes(pending int, unrenderable, deadLettered []string) {
	r := s.r
	r.Checked.Workloads = len(s.subjects)
	r.Checked.Outcomes = len(s.outcomes)
	if len(s.missing) > 0 {
		names := make([]string, 0, len(s.missing))
		interior := 0
		for _, m := range s.missing {
			names = append(names, m.workload)
			if m.interior {
				interior++
			}
		}
		text := fmt.Sprintf("BOMS lacks the outcome (BOM or tombstone) of %d handled changes", len(s.missing))
		if interior > 0 {
			text += fmt.Sprintf(" (%d of them older than an outcome BOMS still holds: history misses those versions)", interior)
		}
		r.add(Finding{Severity: Problem, Area: "BOMS", Text: text, Workloads: names,
			Fix: "render them again from CHANGES and publish them as the transformer did", fix: s.republish})
	}
	if s.twice > 0 {
		r.add(Finding{Severity: Note, Area: "BOMS", Text: fmt.Sprintf("%d outcomes are stored more than once (a repair, or a transformer that lost its state); history shows each change once and sinks skip the copies", s.twice)})
	}
	if pending > 0 {
		r.add(Finding{Severity: Note, Area: "CHANGES", Text: fmt.Sprintf("%d changes wait for the transformer", pending)})
	}
	r.missing = len(s.missing) > 0 || len(unrenderable) > 0
	if len(unrenderable) > 0 {
		r.add(Finding{Severity: Problem, Area: "CHANGES", Text: fmt.Sprintf("%d handled changes have no outcome and cannot be rendered, and are not on the dead-letter stream: %s", len(unrenderable), list(unrenderable))})
	}
	if len(deadLettered) > 0 {
		r.add(Finding{Severity: Note, Area: "CHANGES", Text: fmt.Sprintf("%d changes have no outcome because the transformer dead-lettered them: %s", len(deadLettered), list(deadLettered))})
	}
}

// republish puts back the missing outcomes, workload by workload in change
// order; where a workload's lost outcome is older than its latest one on
// BOMS, that latest one is appended again after them.
func (s *scan) republish(ctx context.Context) (int, error) {
	n := 0
	for i := 0; i < len(s.missing); {
		j := i
		for j < len(s.missing) && s.missing[j].subject == s.missing[i].subject {
			j++
		}
		done, err := s.republishWorkload(ctx, s.missing[i:j])
		n += done
		if err != nil {
			return n, err
		}
		i = j
	}
	return n, nil
}

func (s *scan) republishWorkload(ctx context.Context, ms []missing) (int, error) {
	n := 0
	for _, m := range ms {
		ev, err := s.c.bus.Reader().GetMsg(ctx, schemas.StreamChanges, m.seq)
		if err != nil {
			return n, fmt.Errorf("repair %s: %w", m.workload, err)
		}
		if ev == nil {
			continue
		}
		out, err := s.c.cfg.Transformer.Outcome(ev.Data, m.seq, m.wasServing)
		if err != nil || out == nil {
			return n, fmt.Errorf("repair change %d of %s: it rendered when checked and no longer does: %w", m.seq, m.workload, err)
		}
		dup, err := s.c.cfg.Transformer.Publish(ctx, out)
		if err == nil && dup {
			// BOMS remembers the id of the message it lost (it lost it
			// within its duplicate window, without a restart): this copy
			// goes without one.
			out.Header.Del(jetstream.MsgIDHeader)
			_, err = s.c.cfg.Transformer.Publish(ctx, out)
		}
		if err != nil {
			return n, fmt.Errorf("repair change %d of %s: %w", m.seq, m.workload, err)
		}
		n++
	}
	last := ms[len(ms)-1]
	if !last.interior {
		return n, nil
	}
	// The subject must end with the workload's current state again.
	cur := s.outcomes[s.latest[last.subject]]
	m, err := s.c.bus.Reader().GetMsg(ctx, schemas.StreamBOMs, cur.streamSeq)
	if err != nil || m == nil {
		return n, fmt.Errorf("repair %s: read its latest outcome at BOMS %d: %w", last.workload, cur.streamSeq, err)
	}
	again := nats.NewMsg(m.Subject)
	again.Data = m.Data
	for k, vs := range m.Header {
		if !strings.HasPrefix(k, "Nats-") { // no message id: this copy must be stored
			again.Header[k] = vs
		}
	}
	if _, err := s.c.bus.Writer().Publish(ctx, again, ""); err != nil {
		return n, fmt.Errorf("repair %s: append its latest outcome again: %w", last.workload, err)
	}
	return n, nil
}

// list shows at most 5 items, then how many more.
func list(items []string) string {
	if len(items) <= 5 {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:5], "; ") + fmt.Sprintf("; and %d more", len(items)-5)
}
