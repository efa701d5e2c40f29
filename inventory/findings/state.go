package findings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// state is a workload's findings as FINDINGS holds them: the last finding
// set of its subject, or, when it has none, the last event of each of its
// findings in the layout before finding sets (one subject per finding).
type state struct {
	set schemas.FindingSet
	// seq is the sequence of the set's message, 0 when there is none.
	seq uint64
	// newest is the newest version the findings were written from.
	newest uint64
}

// workloadState reads the findings of w: one direct get of the last
// message of its finding set's subject, riding through a leader election.
// Without one, on a store that holds findings in the older layout
// (oldLayout), the last event of each of its finding subjects.
func workloadState(ctx context.Context, bus *stream.Bus, w schemas.Workload) (state, error) {
	raw, err := bus.Reader().LastMsg(ctx, schemas.StreamFindings, schemas.FindingSetSubject(w))
	if err != nil {
		return state{}, fmt.Errorf("findings of %s: %w", w, err)
	}
	if raw != nil {
		set, err := schemas.DecodeFindingSet(raw.Subject, raw.Data)
		if err != nil { // unreadable: nothing open, and overwritten next
			set = schemas.FindingSet{Workload: w}
		}
		// Sorted as the stage writes them; the merge in apply needs it.
		slices.SortFunc(set.Findings, compareSetFindings)
		return state{set: set, seq: raw.Sequence, newest: set.ChangeSeq}, nil
	}
	old, err := oldLayout(ctx, bus)
	if err != nil || !old {
		return state{set: schemas.FindingSet{Workload: w}}, err
	}
	return oldWorkloadState(ctx, bus, w)
}

// oldStores remembers, per bus, whether FINDINGS holds events in the
// layout before finding sets, so that a store without any is asked once
// (again a minute later: an older replica may still be writing them).
var oldStores sync.Map // *stream.Bus -> oldCheck

type oldCheck struct {
	has bool
	at  time.Time
}

// oldLayout reports whether FINDINGS holds any finding event on a subject
// of its own (bomstream.findings.<cluster>.<uid>.<rule>.<key>): one direct
// get of the last message of the pattern, once per process while it does.
func oldLayout(ctx context.Context, bus *stream.Bus) (bool, error) {
	if v, ok := oldStores.Load(bus); ok {
		if c := v.(oldCheck); c.has || time.Since(c.at) < time.Minute {
			return c.has, nil
		}
	}
	m, err := bus.Reader().LastMsg(ctx, schemas.StreamFindings, schemas.SubjectFindingsPrefix+">")
	if err != nil {
		return false, fmt.Errorf("findings in the per-finding layout: %w", err)
	}
	oldStores.Store(bus, oldCheck{has: m != nil, at: time.Now()})
	return m != nil, nil
}

// oldWorkloadState reads the findings of w in the per-finding layout: one
// stream info call listing its finding subjects, then a direct get of each
// one's last message. An unreadable event is left out (its finding is not
// open).
func oldWorkloadState(ctx context.Context, bus *stream.Bus, w schemas.Workload) (state, error) {
	st := state{set: schemas.FindingSet{Workload: w}}
	s, err := bus.Stream(ctx, schemas.StreamFindings)
	if err != nil {
		return st, err
	}
	var info *jetstream.StreamInfo
	err = bus.Retry(ctx, true, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx, jetstream.WithSubjectFilter(schemas.FindingsOfWorkload(w)))
		return err
	})
	if err != nil {
		return st, fmt.Errorf("findings of %s: %w", w, err)
	}
	for subj := range info.State.Subjects {
		raw, err := bus.Reader().LastMsg(ctx, schemas.StreamFindings, subj)
		if err != nil {
			return st, fmt.Errorf("findings of %s: %w", w, err)
		}
		if raw == nil {
			continue
		}
		ev, err := schemas.DecodeFindingEvent(subj, raw.Data)
		if err != nil {
			continue
		}
		st.set.Findings = append(st.set.Findings, schemas.SetFindingOf(ev))
		st.newest = max(st.newest, ev.ChangeSeq)
	}
	slices.SortFunc(st.set.Findings, compareSetFindings)
	return st, nil
}

func compareSetFindings(a, b schemas.SetFinding) int {
	return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Subject, b.Subject))
}

// Each calls fn with the last event of every finding on FINDINGS (its
// current state), of cluster ("" for all), with the sequence of the
// message that holds it: first the workloads' finding sets, then, on a
// store that holds some, the events of the per-finding layout of the
// workloads that have no set. An unreadable message is skipped and
// counted in the error returned after the others.
func Each(ctx context.Context, bus *stream.Bus, cluster string, fn func(ev schemas.FindingEvent, seq uint64) error) error {
	sets, events := schemas.SubjectFindingSetPrefix+">", schemas.SubjectFindingsPrefix+">"
	if cluster != "" {
		sets, events = schemas.SubjectFindingSetPrefix+cluster+".>", schemas.SubjectFindingsPrefix+cluster+".>"
	}
	bad := 0
	withSet := map[string]bool{} // cluster.uid
	err := bus.Reader().LastPerSubject(ctx, schemas.StreamFindings, sets, false, func(m *jetstream.RawStreamMsg) error {
		withSet[strings.TrimPrefix(m.Subject, schemas.SubjectFindingSetPrefix)] = true
		s, err := schemas.DecodeFindingSet(m.Subject, m.Data)
		if err != nil {
			bad++
			return nil
		}
		for i := range s.Findings {
			if err := fn(s.Event(i), m.Sequence); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	if old, err := oldLayout(ctx, bus); err != nil || !old {
		return errors.Join(err, unreadable(bad))
	}
	err = bus.Reader().LastPerSubject(ctx, schemas.StreamFindings, events, false, func(m *jetstream.RawStreamMsg) error {
		if withSet[oldWorkloadKey(m.Subject)] {
			return nil
		}
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
	return unreadable(bad)
}

func unreadable(bad int) error {
	if bad > 0 {
		return fmt.Errorf("read findings: %d unreadable messages skipped", bad)
	}
	return nil
}

// oldWorkloadKey is the cluster.uid of a subject of the per-finding
// layout (bomstream.findings.<cluster>.<uid>.<rule>.<key>).
func oldWorkloadKey(subject string) string {
	parts := strings.SplitN(strings.TrimPrefix(subject, schemas.SubjectFindingsPrefix), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "." + parts[1]
}
