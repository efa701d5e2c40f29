package findings

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// current is a finding's last event on FINDINGS and its stream sequence;
// an unreadable last event has State "" (the finding counts as not open).
type current struct {
	ev  schemas.FindingEvent
	seq uint64
}

// workloadState reads the last event of each finding of w, by subject:
// one stream info call listing the workload's finding subjects, then a
// direct get of each one's last message, each riding through a leader
// election (bus.Retry).
func workloadState(ctx context.Context, bus *stream.Bus, w schemas.Workload) (map[string]current, error) {
	s, err := bus.Stream(ctx, schemas.StreamFindings)
	if err != nil {
		return nil, err
	}
	var info *jetstream.StreamInfo
	err = bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx, jetstream.WithSubjectFilter(schemas.FindingsOfWorkload(w)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("findings of %s: %w", w, err)
	}
	out := make(map[string]current, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		var raw *jetstream.RawStreamMsg
		err := bus.Retry(ctx, true, func(ctx context.Context) (err error) {
			raw, err = s.GetLastMsgForSubject(ctx, subj)
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("findings of %s: last event of %s: %w", w, subj, err)
		}
		ev, _ := schemas.DecodeFindingEvent(subj, raw.Data) // unreadable: not open, and overwritten next
		if ev.State != schemas.FindingOpened && ev.State != schemas.FindingResolved {
			ev = schemas.FindingEvent{}
		}
		out[subj] = current{ev: ev, seq: raw.Sequence}
	}
	return out, nil
}

// Each calls fn with the last event of every finding on FINDINGS (its
// current state) whose subject matches filter ("" for all), in stream
// order. An unreadable event is skipped and counted in the error returned
// after the others.
func Each(ctx context.Context, bus *stream.Bus, filter string, fn func(ev schemas.FindingEvent, seq uint64) error) error {
	if filter == "" {
		filter = schemas.SubjectFindingsPrefix + ">"
	}
	bad := 0
	err := bus.LastPerSubject(ctx, schemas.StreamFindings, filter, false, func(m *jetstream.RawStreamMsg) error {
		ev, err := schemas.DecodeFindingEvent(m.Subject, m.Data)
		if err != nil {
			bad++
			return nil
		}
		return fn(ev, m.Sequence)
	})
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	if bad > 0 {
		return fmt.Errorf("read findings: %d unreadable events skipped", bad)
	}
	return nil
}
