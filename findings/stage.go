package findings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/engine"
)

// Config is the findings stage's configuration. The zero value runs the
// embedded default rules under the durable consumer "findings".
type Config struct {
	// Disabled turns the stage off.
	Disabled bool `yaml:"disabled"`
	// RulesFile is the rules file; "" means the embedded defaults.
	RulesFile string `yaml:"rulesFile"`
	// Engine tunes the consume engine (durable, concurrency, retries).
	Engine engine.Config `yaml:"engine"`
}

// Validate checks the engine settings and reads the rules file, naming
// the field, or the file, rule and field, at fault.
func (c Config) Validate() error {
	if c.Disabled {
		return nil
	}
	if err := c.Engine.Validate("findings.engine"); err != nil {
		return err
	}
	if _, err := LoadRules(c.RulesFile, nil); err != nil {
		return fmt.Errorf("findings.rulesFile: %w", err)
	}
	return nil
}

// Counts are what a stage (or one replay) did.
type Counts struct {
	Evaluated uint64 `json:"evaluated"` // BOMs and tombstones evaluated, their findings written
	Older     uint64 `json:"older"`     // versions older than the findings already hold, skipped
	Opened    uint64 `json:"opened"`    // findings opened (in the finding sets written)
	Resolved  uint64 `json:"resolved"`  // findings resolved (in the finding sets written)
}

type counters struct{ evaluated, older, opened, resolved atomic.Uint64 }

func (c *counters) snapshot() Counts {
	return Counts{Evaluated: c.evaluated.Load(), Older: c.older.Load(), Opened: c.opened.Load(), Resolved: c.resolved.Load()}
}

// Stage evaluates every BOM on BOMS against the rules, as a consumer of the
// engine (retries, dead letters and metrics as every stage), and writes
// what changed to FINDINGS.
type Stage struct {
	bus   *stream.Bus
	rules *Rules
	cfg   engine.Config
	log   *zap.Logger
	tally *tally // the workloads with findings, and the gauge
	eng   *engine.Engine
	n     counters
	rooms sync.Pool // *publishRoom
}

// New prepares the stage; rules come from LoadRules. Metrics are
// registered on reg (nil: none). Nothing touches the server before Run.
func New(bus *stream.Bus, rules *Rules, cfg Config, log *zap.Logger, reg prometheus.Registerer) (*Stage, error) {
	if log == nil {
		log = zap.NewNop()
	}
	t, err := newTally(reg)
	if err != nil {
		return nil, fmt.Errorf("findings: metrics: %w", err)
	}
	ec := cfg.Engine
	ec.Stage, ec.Stream = schemas.StageFindings, schemas.StreamBOMs
	ec.Durable = cmp.Or(ec.Durable, schemas.StageFindings)
	ec.Filter = schemas.SubjectBOMsPrefix + ">"
	ec.Description = "bomstream findings"
	s := &Stage{bus: bus, rules: rules, cfg: ec, log: log.With(zap.String("stage", schemas.StageFindings)), tally: t}
	s.rooms.New = func() any { return &publishRoom{header: nats.Header{}} }
	if s.eng, err = engine.New(bus, ec, s.handler(&s.n), log, reg); err != nil {
		return nil, fmt.Errorf("findings: %w", err)
	}
	return s, nil
}

// Run reads the open findings for the gauge, then consumes BOMS until ctx
// is done (see engine.Engine.Run).
func (s *Stage) Run(ctx context.Context) error {
	s.start(ctx)
	return s.eng.Run(ctx)
}

// RunInline is Run for a stage that follows the transformer of its
// process (Follow) instead of consuming BOMS: it reads the open findings
// for the gauge, then waits for ctx.
func (s *Stage) RunInline(ctx context.Context) error {
	s.start(ctx)
	<-ctx.Done()
	return nil
}

// start reads the open findings for the gauge and the workloads known to
// have findings.
func (s *Stage) start(ctx context.Context) {
	s.tally.reset()
	if err := stored.Each(ctx, s.bus.Reader(), "", func(ev schemas.FindingEvent, _ uint64) error {
		s.tally.set(ev)
		return nil
	}); err != nil {
		s.log.Warn("read open findings", zap.Error(err))
	} else {
		s.tally.loaded.Store(true)
	}
	s.log.Info("findings stage started", zap.String("rules", s.rules.Source), zap.Strings("ids", s.rules.IDs()))
}

// Health is the engine's.
func (s *Stage) Health() engine.Health { return s.eng.Health() }

// Durable is the name of the stage's consumer on BOMS.
func (s *Stage) Durable() string { return s.cfg.Durable }

// Retry puts one dead letter of the stage back through it (see
// engine.Engine.Redrive), with the same steps as Run.
func (s *Stage) Retry(ctx context.Context, d deadletter.Letter) (engine.Redriven, error) {
	return s.eng.Redrive(ctx, d)
}

// Counts returns what the stage did so far.
func (s *Stage) Counts() Counts { return s.n.snapshot() }

// Replay evaluates BOMS again from startSeq (0: the first message) up to
// its last message, with the same steps as Run: versions older than what
// FINDINGS holds for their workload are skipped, and a version that opens
// and resolves nothing writes nothing, so a replay writes nothing twice. It returns the replay's own counts.
func (s *Stage) Replay(ctx context.Context, startSeq uint64) (Counts, error) {
	var n counters
	eng, err := engine.New(s.bus, s.cfg, s.handler(&n), s.log.With(zap.Bool("replay", true)), nil)
	if err != nil {
		return Counts{}, fmt.Errorf("findings replay: %w", err)
	}
	_, err = eng.Replay(ctx, startSeq, time.Time{}, nil)
	return n.snapshot(), err
}

// handler evaluates one BOMS message and writes the workload's finding
// set when a finding opens or resolves. The engine calls it for one
// workload at a time; another writer appending first (a second replica)
// makes it read the state again and decide again.
func (s *Stage) handler(n *counters) engine.Handler {
	return func(ctx context.Context, m *engine.Msg) error {
		bm, err := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
		if err != nil {
			return engine.Permanent(fmt.Errorf("bad message: %w", err))
		}
		return s.evaluate(ctx, &bm, cmp.Or(bm.EventTime, m.Time), n)
	}
}

// Follow evaluates a BOMS message its writer, the transformer stage of
// the same process, has just stored (see service.Follower), with the
// same steps as a message the stage consumes: it is how the stage runs
// inline (RunInline), without a consumer of BOMS. The time of a finding
// is the version's event time, or now when it has none.
func (s *Stage) Follow(ctx context.Context, bm *schemas.BOMMessage) error {
	return s.evaluate(ctx, bm, cmp.Or(bm.EventTime, time.Now().UTC()), &s.n)
}

// evaluate decides and writes the workload's next finding set for one
// version, read again and decided again when another writer appended
// first.
func (s *Stage) evaluate(ctx context.Context, bm *schemas.BOMMessage, when time.Time, n *counters) error {
	var want []Finding
	if !bm.IsTombstone() {
		facts := bm.Facts // given by the transformer of the process
		if facts == nil {
			f, err := ReadFacts(bm.BOM)
			if err != nil {
				return engine.Permanent(fmt.Errorf("%s version %d: %w", bm.Workload, bm.ChangeSeq, err))
			}
			facts = &f
		}
		want = s.rules.Evaluate(*facts)
	}
	for attempt := 0; ; attempt++ {
		st, err := s.state(ctx, bm.Workload, attempt == 0 && len(want) > 0)
		if err != nil {
			return err
		}
		s.tally.setFindings(&st.Set)
		if bm.ChangeSeq < st.Newest {
			n.older.Add(1) // a replay, or a late redelivery: FINDINGS is past it
			return nil
		}
		err = s.apply(ctx, *bm, when, want, st, n)
		if errors.Is(err, stream.ErrWrongLastSeq) && attempt < 3 {
			continue
		}
		if err != nil {
			return err
		}
		n.evaluated.Add(1)
		return nil
	}
}

// apply writes the workload's next finding set when the version opens a
// wanted finding not open, or resolves an open finding not wanted;
// nothing when neither. Both the set read (st) and want are sorted by
// rule and subject, one finding per pair: the next set is their merge,
// sorted the same way.
func (s *Stage) apply(ctx context.Context, bm schemas.BOMMessage, when time.Time, want []Finding, st stored.State, n *counters) error {
	old := st.Set.Findings
	r := s.rooms.Get().(*publishRoom)
	defer s.rooms.Put(r)
	next := schemas.FindingSet{Workload: bm.Workload, ChangeSeq: bm.ChangeSeq, Time: when, Findings: slices.Grow(r.findings[:0], len(old)+len(want)), Opened: r.opened[:0], Resolved: r.resolved[:0]}
	if cap(next.Findings) <= maxRoomFindings {
		r.findings = next.Findings
	}
	for i, j := 0, 0; i < len(old) || j < len(want); {
		var c int // old[i] against want[j]; the missing side is greater
		switch {
		case i == len(old):
			c = 1
		case j == len(want):
			c = -1
		default:
			c = cmp.Or(cmp.Compare(old[i].Rule, want[j].Rule), cmp.Compare(old[i].Subject, want[j].Subject))
		}
		switch {
		case c == 0 && old[i].State == schemas.FindingOpened: // wanted and open
			next.Findings = append(next.Findings, old[i])
			i, j = i+1, j+1
		case c >= 0: // wanted, and not in the set or resolved there: it opens
			f := want[j]
			next.Opened = append(next.Opened, len(next.Findings))
			next.Findings = append(next.Findings, schemas.SetFinding{State: schemas.FindingOpened, Rule: f.Rule, Severity: f.Severity,
				Subject: f.Subject, Message: f.Message, ChangeSeq: bm.ChangeSeq, Time: when})
			if c == 0 {
				i++
			}
			j++
		case old[i].State != schemas.FindingOpened: // resolved, and not wanted
			next.Findings = append(next.Findings, old[i])
			i++
		default: // open, and not wanted: it resolves
			f := old[i]
			f.State, f.ChangeSeq, f.OpenedAt, f.Time, f.Reason = schemas.FindingResolved, bm.ChangeSeq, f.Time, when, schemas.FindingFixed
			if bm.IsTombstone() {
				f.Reason = bm.Tombstone
			} else if _, ok := s.rules.Rule(f.Rule); !ok {
				f.Reason = "rule-removed"
			}
			next.Resolved = append(next.Resolved, len(next.Findings))
			next.Findings = append(next.Findings, f)
			i++
		}
	}
	r.opened, r.resolved = next.Opened, next.Resolved
	if len(next.Opened) == 0 && len(next.Resolved) == 0 {
		return nil
	}
	return s.publish(ctx, r, next, st.Seq, n)
}

// publish appends the finding set after lastSeq, the last sequence of its
// subject its writer read.
func (s *Stage) publish(ctx context.Context, r *publishRoom, set schemas.FindingSet, lastSeq uint64, n *counters) error {
	subj, body, err := set.AppendEncode(r.body[:0])
	if err != nil {
		return engine.Permanent(err)
	}
	if cap(body) <= maxRoomBody {
		r.body = body
	}
	clear(r.header)
	// No message id: the condition alone makes two writers deciding from
	// the same state (or a retry of a stored attempt) write once, the
	// other reading again.
	m := &nats.Msg{Subject: subj, Data: body, Header: r.header}
	if _, err := s.bus.Writer().PublishAfter(ctx, m, "", lastSeq); err != nil {
		return fmt.Errorf("findings of %s version %d: %w", set.Workload, set.ChangeSeq, err)
	}
	n.opened.Add(uint64(len(set.Opened)))
	n.resolved.Add(uint64(len(set.Resolved)))
	s.tally.setFindings(&set, set.Opened, set.Resolved)
	return nil
}

// publishRoom is the scratch space of one evaluation, lent from a pool:
// the next set's findings and indexes, its body's buffer and the header
// map. Nothing refers to them once the set is written: the client copies
// the body and the headers into its write buffer before it sends, and
// the tally keeps strings only.
type publishRoom struct {
	findings         []schemas.SetFinding
	opened, resolved []int
	body             []byte
	header           nats.Header
}

// maxRoomBody and maxRoomFindings bound what a publishRoom keeps: a set
// of hundreds of findings is not worth holding on to.
const (
	maxRoomBody     = 16 << 10
	maxRoomFindings = 64
)

// state is the workload's findings as FINDINGS holds them
// (stored.WorkloadState).
// When the version opens something (mayAssume) and the workload has no
// finding set as far as the process knows (tally), it is taken to
// have none without reading: the set written is appended only while its
// subject is still empty, and is read and decided again else, so this
// saves the read of fresh workloads and changes no outcome.
func (s *Stage) state(ctx context.Context, w schemas.Workload, mayAssume bool) (stored.State, error) {
	if mayAssume && s.tally.absent(w) {
		old, err := stored.OldLayout(ctx, s.bus.Reader())
		if err != nil {
			return stored.State{}, err
		}
		if !old {
			return stored.State{Set: schemas.FindingSet{Workload: w}}, nil
		}
	}
	st, err := stored.WorkloadState(ctx, s.bus.Reader(), w)
	if err == nil && len(st.Set.Findings) > 0 {
		s.tally.known(w)
	}
	return st, err
}
