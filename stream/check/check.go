package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// Transformer is what a check needs of the transformer stage;
// *service.Service is one.
type Transformer interface {
	// Outcome is the BOMS message the stage publishes for the change event
	// data stored at changeSeq, given whether the workload was serving
	// before it; nil when it publishes none. It must not touch the network.
	Outcome(data []byte, changeSeq uint64, wasServing bool) (*nats.Msg, error)
	// Publish stores an outcome on BOMS as the stage does; duplicate says
	// BOMS dropped it for a message id it remembers.
	Publish(ctx context.Context, out *nats.Msg) (duplicate bool, err error)
}

// Applied is a sink ledger's record of one workload: the last version the
// sink applied.
type Applied struct {
	Cluster, UID string
	ChangeSeq    uint64
	Workload     string // cluster/namespace/kind/name, for the report
}

// Ledgers reads the sinks' ledgers (the sink runner keeps them).
type Ledgers interface {
	// ReadLedger returns every entry of sink's ledger; keys it cannot read
	// are listed in bad.
	ReadLedger(ctx context.Context, sink string) (entries []Applied, bad []string, err error)
}

// Config says where the stages keep their state.
type Config struct {
	// Transformer renders events whose outcome BOMS lacks; required.
	Transformer Transformer
	// Ledgers reads the sinks' ledgers, held against BOMS; required.
	Ledgers Ledgers
	// TransformerDurable is the transformer's consumer on CHANGES
	// (default "transformer").
	TransformerDurable string
	// SinkDurable names the consumer of a sink on BOMS (default
	// "sink-<name>").
	SinkDurable func(sink string) string
	// OtherUpTo is the CHANGES sequence up to which another transformer
	// than Transformer (other rules, another version) handled the events:
	// an event there without an outcome may be one it rendered to nothing,
	// so it is not taken for a lost outcome (holes in BOMS still are).
	// 0: Transformer handled them all. See package transformer/rerender.
	OtherUpTo uint64
}

// Checker checks one store.
type Checker struct {
	bus *stream.Bus
	cfg Config
}

// New prepares a check of the store bus is connected to.
func New(bus *stream.Bus, cfg Config) (*Checker, error) {
	if bus == nil || cfg.Transformer == nil || cfg.Ledgers == nil {
		return nil, errors.New("check: bus, transformer and ledgers are required")
	}
	if cfg.TransformerDurable == "" {
		cfg.TransformerDurable = schemas.StageTransformer
	}
	if cfg.SinkDurable == nil {
		cfg.SinkDurable = schemas.SinkDurable
	}
	return &Checker{bus: bus, cfg: cfg}, nil
}

// Mode is how thoroughly Check looks.
type Mode int

const (
	// Full reads every message of CHANGES and BOMS (headers only, and the
	// events it must render) and every ledger.
	Full Mode = iota
	// Quick reads the streams' and consumers' states and each workload's
	// last change and last outcome, and goes on as Full only when they
	// show a loss: for a process start, where a store of 100,000 changes
	// must not wait for a full read.
	Quick
)

// Check looks at the store and reports what it found. It changes nothing.
func (c *Checker) Check(ctx context.Context, mode Mode) (*Report, error) {
	r := &Report{}
	for _, name := range []string{schemas.StreamChanges, schemas.StreamBOMs} {
		cs, err := c.bus.Durables().List(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		r.Consumers = append(r.Consumers, cs...)
	}
	if mode == Quick {
		suspect, err := c.quick(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		if !suspect {
			r.Quick = true
			return r, nil
		}
	}
	s := &scan{r: r, c: c}
	for _, step := range []func(context.Context) error{
		s.readBOMs, s.readChanges, s.readDeadLetters, s.states, s.gaps, s.checkOutcomes, s.consumers, s.ledgers,
	} {
		if err := step(ctx); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
	}
	return r, nil
}

// states reads the streams' states. A store learns of a damaged block only
// when it loads it: read after the messages, they are right.
func (s *scan) states(ctx context.Context) error {
	return s.c.readStates(ctx, s.r)
}

func (c *Checker) readStates(ctx context.Context, r *Report) error {
	var err error
	if r.Changes, err = c.bus.Reader().State(ctx, schemas.StreamChanges); err != nil {
		return err
	}
	r.BOMs, err = c.bus.Reader().State(ctx, schemas.StreamBOMs)
	return err
}

// quick reports whether a full check is needed. It holds every workload's
// last change against its last outcome on BOMS (rendering the change when
// there is none, to tell whether one is due), then looks at the states: a
// hole in a stream, a stream that starts late with no limits to explain
// it, a consumer past its stream's end, or a transformer that delivered
// less than BOMS shows it handled.
func (c *Checker) quick(ctx context.Context, r *Report) (bool, error) {
	var handled uint64
	tc := r.consumer(schemas.StreamChanges, c.cfg.TransformerDurable)
	if tc != nil {
		handled = tc.AckFloor
	}
	type last struct {
		change    uint64
		tombstone bool
	}
	latest := map[string]last{}
	var maxChange uint64
	err := c.bus.Reader().LastPerSubject(ctx, schemas.StreamBOMs, schemas.SubjectBOMsPrefix+">", true, func(m *jetstream.RawStreamMsg) error {
		bm, _ := schemas.DecodeBOMMessage("", m.Header, m.Data)
		latest[m.Subject] = last{bm.ChangeSeq, bm.IsTombstone()}
		maxChange = max(maxChange, bm.ChangeSeq)
		return nil
	})
	if err != nil {
		return false, err
	}
	suspect := false
	err = c.bus.Reader().LastPerSubject(ctx, schemas.StreamChanges, schemas.SubjectChangesPrefix+">", true, func(m *jetstream.RawStreamMsg) error {
		l := latest[bomsSubject(m.Subject)]
		switch {
		case l.change == m.Sequence || m.Sequence > handled && l.change < m.Sequence:
			return nil
		case l.change > m.Sequence:
			suspect = true
			return stream.ErrStop
		}
		if m.Sequence <= c.cfg.OtherUpTo {
			return nil
		}
		ev, err := c.bus.Reader().GetMsg(ctx, schemas.StreamChanges, m.Sequence)
		if err != nil || ev == nil {
			return err
		}
		out, err := c.cfg.Transformer.Outcome(ev.Data, m.Sequence, l.change > 0 && !l.tombstone)
		if err == nil && out != nil {
			suspect = true
			return stream.ErrStop
		}
		return nil
	})
	if err != nil || suspect {
		return suspect, err
	}
	if err := c.readStates(ctx, r); err != nil {
		return false, err
	}
	for _, st := range []stream.StreamState{r.Changes, r.BOMs} {
		if len(st.Lost) > 0 || st.FirstSeq > 1 && !st.Limited {
			return true, nil
		}
	}
	for _, cs := range r.Consumers {
		end := r.Changes.LastSeq
		if cs.Stream == schemas.StreamBOMs {
			end = r.BOMs.LastSeq
		}
		if cs.Delivered > end {
			return true, nil
		}
	}
	return tc != nil && tc.Delivered < maxChange, nil
}

// outcome is one BOMS message as the check sees it.
type outcome struct {
	streamSeq uint64
	subject   string // its BOMS subject
	tombstone bool
	workload  string // cluster/namespace/kind/name
}

// scan holds what one full check read.
type scan struct {
	r *Report
	c *Checker

	outcomes  map[uint64]outcome  // by change sequence: the first stored
	twice     int                 // outcomes stored more than once
	latest    map[string]uint64   // BOMS subject -> highest change sequence
	events    map[string][]uint64 // BOMS subject -> its workload's change sequences, in order
	subjects  []string            // the keys of events, in order of first event
	onChanges map[uint64]bool     // change sequences CHANGES holds
	dlq       map[string]map[uint64]bool

	missing []missing // outcomes BOMS lost, by workload then change
}

// missing is a change whose outcome BOMS lacks.
type missing struct {
	subject    string // BOMS subject
	seq        uint64 // change sequence
	wasServing bool   // the workload's state before it
	workload   string
	interior   bool // BOMS holds a later outcome of the workload
}

func (s *scan) readBOMs(ctx context.Context) error {
	s.outcomes = map[uint64]outcome{}
	s.latest = map[string]uint64{}
	names := map[string]string{} // one copy of each name
	return s.c.bus.Reader().Headers(ctx, schemas.StreamBOMs, "", 0, func(m *jetstream.RawStreamMsg) error {
		bm, _ := schemas.DecodeBOMMessage("", m.Header, m.Data)
		seq := bm.ChangeSeq
		if seq == 0 {
			s.r.add(Finding{Severity: Note, Area: "BOMS", Text: fmt.Sprintf("message %d has no readable change sequence; it is not checked", m.Sequence)})
			return nil
		}
		name := workloadName(bm.Workload, m.Subject)
		if shared, ok := names[name]; ok {
			name = shared
		} else {
			names[name] = name
		}
		if _, dup := s.outcomes[seq]; dup {
			s.twice++
		} else {
			s.outcomes[seq] = outcome{streamSeq: m.Sequence, subject: m.Subject, tombstone: bm.IsTombstone(), workload: name}
		}
		if seq > s.latest[m.Subject] {
			s.latest[m.Subject] = seq
		}
		return nil
	})
}

// workloadName names w, or falls back on the subject when the message did
// not say which workload it is of.
func workloadName(w schemas.Workload, subject string) string {
	if w.Name == "" {
		return subject
	}
	return w.String()
}

func (s *scan) readChanges(ctx context.Context) error {
	s.events = map[string][]uint64{}
	s.onChanges = map[uint64]bool{}
	return s.c.bus.Reader().Headers(ctx, schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
		subj := bomsSubject(m.Subject)
		if _, ok := s.events[subj]; !ok {
			s.subjects = append(s.subjects, subj)
		}
		s.events[subj] = append(s.events[subj], m.Sequence)
		s.onChanges[m.Sequence] = true
		return nil
	})
}

// bomsSubject is the BOMS subject of a CHANGES subject.
func bomsSubject(changes string) string {
	return schemas.SubjectBOMsPrefix + strings.TrimPrefix(changes, schemas.SubjectChangesPrefix)
}

// readDeadLetters collects, per stage, the sequences it dead-lettered:
// their outcome is missing for a known reason.
func (s *scan) readDeadLetters(ctx context.Context) error {
	s.dlq = map[string]map[uint64]bool{}
	return deadletter.New(s.c.bus).List(ctx, "", func(d deadletter.Letter) error {
		if s.dlq[d.Stage] == nil {
			s.dlq[d.Stage] = map[uint64]bool{}
		}
		s.dlq[d.Stage][d.Seq] = true
		return nil
	})
}

// gaps reports the holes of both streams, and for CHANGES the workloads
// whose history has one (known from the outcomes BOMS still holds).
func (s *scan) gaps(context.Context) error {
	r := s.r
	if lost := lostOf(r.BOMs); len(lost) > 0 {
		r.add(Finding{Severity: Note, Area: "BOMS", Text: fmt.Sprintf("the store lost %d messages (sequences %s): the changes whose outcomes they were are listed under problems until they are rendered again", lost.Len(), lost)})
	}
	lost := lostOf(r.Changes)
	if len(lost) == 0 {
		return nil
	}
	var names []string
	known := 0
	for seq, o := range s.outcomes {
		if lost.Contains(seq) {
			names = append(names, o.workload)
			known++
		}
	}
	r.add(Finding{Severity: Problem, Area: "CHANGES",
		Text: fmt.Sprintf("the store lost %d change events (sequences %s), which nothing can rebuild; %d of them are known from their outcomes on BOMS, of the workloads below, whose history has a hole",
			lost.Len(), lost, known),
		Workloads: names})
	return nil
}

// lostOf is what st lacks: its holes, and its head when it starts after 1
// with no limit to drop old messages.
func lostOf(st stream.StreamState) stream.Ranges {
	if st.FirstSeq <= 1 || st.Limited {
		return st.Lost
	}
	return append(stream.Ranges{{First: 1, Last: min(st.FirstSeq-1, st.LastSeq)}}, st.Lost...)
}
