package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bomstream/bomstream/stream"
)

// Severity says whether a finding needs someone.
type Severity int

const (
	// Note is worth knowing and needs nothing: a repaired hole, work that
	// is still to do.
	Note Severity = iota
	// Problem is data lost or about to be: an exit code of 1 for `check`.
	Problem
)

// Finding is one thing a check found.
type Finding struct {
	Severity Severity
	// Area is what it concerns: "CHANGES", "BOMS", "consumer transformer",
	// "sink file".
	Area string
	Text string
	// Workloads are the ones concerned (cluster/namespace/kind/name).
	Workloads []string
	// Fix says what Repair does about it; "" when nothing can be done.
	Fix string
	fix func(context.Context) (int, error)
}

// Ledger is a sink ledger the check read.
type Ledger struct {
	Sink    string
	Entries int
}

// Report is what a check found.
type Report struct {
	Changes, BOMs stream.StreamState
	Consumers     []stream.ConsumerState
	Ledgers       []Ledger
	// Quick says only the states were read: they showed no loss.
	Quick    bool
	Checked  struct{ Events, Outcomes, Workloads int }
	Findings []Finding

	missing bool // an outcome BOMS lacks, derivable or not
}

func (r *Report) add(f Finding) {
	sort.Strings(f.Workloads)
	f.Workloads = compact(f.Workloads)
	r.Findings = append(r.Findings, f)
}

func compact(xs []string) []string {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (r *Report) consumer(streamName, name string) *stream.ConsumerState {
	for i := range r.Consumers {
		if c := &r.Consumers[i]; c.Stream == streamName && c.Name == name {
			return c
		}
	}
	return nil
}

// Problems counts the findings of severity Problem.
func (r *Report) Problems() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Problem {
			n++
		}
	}
	return n
}

// Repairable counts the findings Repair can do something about.
func (r *Report) Repairable() int {
	n := 0
	for _, f := range r.Findings {
		if f.fix != nil {
			n++
		}
	}
	return n
}

// Repaired is what Repair did for one finding.
type Repaired struct {
	Finding Finding
	Count   int // messages published or consumers changed
	Err     error
}

// Repair applies the fix of every finding that has one, in the order they
// were found (consumers before the ledgers that reset them further). It
// goes on after a failed fix and returns every failure joined. Check again
// afterwards to see what is left.
func (c *Checker) Repair(ctx context.Context, r *Report) ([]Repaired, error) {
	var done []Repaired
	var errs []error
	for _, f := range r.Findings {
		if f.fix == nil {
			continue
		}
		n, err := f.fix(ctx)
		done = append(done, Repaired{Finding: f, Count: n, Err: err})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Area, err))
		}
	}
	return done, errors.Join(errs...)
}

// maxNames bounds the workloads a printed finding lists.
const maxNames = 10

// Print writes the report for a person: the streams, the consumers and
// ledgers, then the problems and the notes, each with the workloads it
// concerns and what --repair does.
func (r *Report) Print(w io.Writer) {
	for _, st := range []stream.StreamState{r.Changes, r.BOMs} {
		fmt.Fprintf(w, "%-8s %d messages, sequences %d-%d", st.Name, st.Msgs, st.FirstSeq, st.LastSeq)
		if len(st.Lost) > 0 {
			fmt.Fprintf(w, ", %d lost (%s)", st.Lost.Len(), st.Lost)
		}
		fmt.Fprintln(w)
	}
	for _, cs := range r.Consumers {
		fmt.Fprintf(w, "consumer %s on %s: delivered %d, settled up to %d, %d to deliver, %d unsettled\n",
			cs.Name, cs.Stream, cs.Delivered, cs.AckFloor, cs.Pending, cs.AckPending)
	}
	for _, l := range r.Ledgers {
		fmt.Fprintf(w, "ledger of sink %s: %d workloads\n", l.Sink, l.Entries)
	}
	if r.Quick {
		fmt.Fprintln(w, "quick check: the stream and consumer states show no loss")
	} else {
		fmt.Fprintf(w, "checked %d changes of %d workloads against %d outcomes on BOMS\n", r.Checked.Events, r.Checked.Workloads, r.Checked.Outcomes)
	}
	for _, sev := range []Severity{Problem, Note} {
		first := true
		for _, f := range r.Findings {
			if f.Severity != sev {
				continue
			}
			if first {
				fmt.Fprintf(w, "\n%s:\n", map[Severity]string{Problem: "problems", Note: "notes"}[sev])
				first = false
			}
			fmt.Fprintf(w, "  %s: %s\n", f.Area, f.Text)
			if len(f.Workloads) > 0 {
				fmt.Fprintf(w, "    workloads (%d): %s\n", len(f.Workloads), names(f.Workloads))
			}
			if f.Fix != "" {
				fmt.Fprintf(w, "    repair: %s\n", f.Fix)
			}
		}
	}
	fmt.Fprintln(w)
	switch p, fixable := r.Problems(), r.Repairable(); {
	case p == 0:
		fmt.Fprintln(w, "no problems")
	case fixable > 0:
		fmt.Fprintf(w, "%d problems; `bomstream check --repair` repairs %d of them\n", p, fixable)
	default:
		fmt.Fprintf(w, "%d problems, none of which can be repaired\n", p)
	}
}

// names lists at most maxNames names, then how many more.
func names(xs []string) string {
	if len(xs) <= maxNames {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:maxNames], ", ") + fmt.Sprintf(" and %d more", len(xs)-maxNames)
}

// Settle records, after a full check that found no outcome missing, that
// the holes of BOMS hold nothing more to rebuild: history and replay stop
// warning about them. It does nothing after a quick check, or when an
// outcome is still missing.
func (c *Checker) Settle(ctx context.Context, r *Report) error {
	if r.Quick || len(r.BOMs.Lost) == 0 || r.missing {
		return nil
	}
	return c.bus.Reader().Settle(ctx, r.BOMs.Name, r.BOMs.Lost)
}
