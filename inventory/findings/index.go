package findings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Index keeps the state of every finding in memory, read from FINDINGS
// once and then followed, so that a reader asking often (the web pages:
// the open findings of each workload, a page of findings) does not read
// the whole stream each time. It keeps per finding what its filters and
// its order need, and the stream sequence of the message that holds its
// last state (its workload's finding set, or an event of the per-finding
// layout); the events a page shows are read back by sequence (Page). It
// is safe for concurrent use: one loader (Load, Follow), any number of
// readers.
type Index struct {
	mu      sync.RWMutex
	byKey   map[uint64]*indexed // by the hash of the finding's name (findingKey)
	wls     map[string]*indexedWorkload
	order   []*indexedWorkload // by cluster, namespace, kind, name, uid
	pending []*indexedWorkload // new since the last resort: not in order yet
	open    map[string]int     // open findings per workload, by cluster/uid
	lastSeq uint64
	loaded  bool
	bad     int
	strs    map[string]string // interned: rules, severities
}

// indexed is what the index keeps of one finding.
type indexed struct {
	seq                     uint64 // of the message that holds its last state
	open                    bool
	rule, severity, subject string
}

// indexedWorkload is a workload and its findings, by rule then subject.
type indexedWorkload struct {
	w        schemas.Workload
	findings []*indexed
	setSeq   uint64 // of its last finding set, 0 when it has none
}

// NewIndex returns an empty index; Load fills it.
func NewIndex() *Index {
	return &Index{byKey: map[uint64]*indexed{}, open: map[string]int{}, strs: map[string]string{}, wls: map[string]*indexedWorkload{}}
}

// findingKey is the hash of a finding's name: workload, rule, subject.
func findingKey(ev schemas.FindingEvent) uint64 {
	h := fnv.New64a()
	for _, s := range []string{ev.Workload.Cluster, ev.Workload.UID, ev.Rule, ev.Subject} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// Load reads the events stored after the last one the index holds, up to
// the last one stored when it is called. An event it cannot read is
// counted (Stats) and skipped; the finding's next event puts it right.
// The stream not existing yet (no findings stage has run) is no error.
func (ix *Index) Load(ctx context.Context, bus *stream.Bus) error {
	ix.mu.RLock()
	from := ix.lastSeq + 1
	ix.mu.RUnlock()
	var batch []decodedEvent
	flush := func() {
		stream.Parallel(batch, (*decodedEvent).decode)
		ix.mu.Lock()
		for i := range batch {
			ix.apply(&batch[i])
		}
		ix.mu.Unlock()
		batch = batch[:0]
	}
	err := bus.Reader().Messages(ctx, schemas.StreamFindings, "", from, func(m *jetstream.RawStreamMsg) error {
		if batch = append(batch, decodedEvent{raw: m}); len(batch) == 4096 {
			flush()
		}
		return nil
	})
	flush()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("findings index: %w", err)
	}
	ix.mu.Lock()
	ix.resort() // once a load, not once a batch
	ix.loaded = true
	ix.mu.Unlock()
	return nil
}

// decodedEvent is one message of FINDINGS, decoded outside the lock: a
// workload's finding set, or an event of the per-finding layout.
type decodedEvent struct {
	raw   *jetstream.RawStreamMsg
	isSet bool
	set   schemas.FindingSet
	ev    schemas.FindingEvent
	err   error
}

// decode reads the set or event of d's message.
func (d *decodedEvent) decode() {
	if d.isSet = strings.HasPrefix(d.raw.Subject, schemas.SubjectFindingSetPrefix); d.isSet {
		d.set, d.err = schemas.DecodeFindingSet(d.raw.Subject, d.raw.Data)
		return
	}
	d.ev, d.err = schemas.DecodeFindingEvent(d.raw.Subject, d.raw.Data)
}

// apply adds one decoded message; the caller holds the write lock. A
// workload's finding set replaces what the index holds of its findings;
// once it has one, its events in the per-finding layout are ignored.
func (ix *Index) apply(d *decodedEvent) {
	m := d.raw
	ix.lastSeq = max(ix.lastSeq, m.Sequence)
	if d.err != nil || !d.isSet && d.ev.State != schemas.FindingOpened && d.ev.State != schemas.FindingResolved {
		ix.bad++
		return
	}
	if !d.isSet {
		ev := d.ev
		if iw := ix.wls[ev.Workload.Cluster+"/"+ev.Workload.UID]; iw != nil && iw.setSeq > 0 {
			return
		}
		ix.update(ev, m.Sequence)
		return
	}
	w := d.set.Workload
	iw := ix.workload(w.Cluster+"/"+w.UID, w)
	if iw.setSeq > m.Sequence {
		return
	}
	iw.setSeq = m.Sequence
	for i := range d.set.Findings {
		ix.update(d.set.Event(i), m.Sequence)
	}
}

// update sets the state of ev's finding, read at seq.
func (ix *Index) update(ev schemas.FindingEvent, seq uint64) {
	key := findingKey(ev)
	wk := ev.Workload.Cluster + "/" + ev.Workload.UID
	f := ix.byKey[key]
	if f == nil {
		f = &indexed{rule: ix.intern(ev.Rule), subject: ev.Subject} // a finding's name never changes
		ix.byKey[key] = f
		ix.workload(wk, ev.Workload).add(f)
	} else if f.seq > seq {
		return
	}
	if f.open {
		if ix.open[wk]--; ix.open[wk] <= 0 {
			delete(ix.open, wk)
		}
	}
	f.seq, f.open = seq, ev.State == schemas.FindingOpened
	f.severity = ix.intern(ev.Severity)
	if f.open {
		ix.open[wk]++
	}
}

// add inserts f in rule order, then subject (List's order); f is new.
func (iw *indexedWorkload) add(f *indexed) {
	i, _ := slices.BinarySearchFunc(iw.findings, f, func(a, b *indexed) int {
		return cmp.Or(cmp.Compare(a.rule, b.rule), cmp.Compare(a.subject, b.subject))
	})
	iw.findings = slices.Insert(iw.findings, i, f)
}

func (ix *Index) intern(s string) string {
	if v, ok := ix.strs[s]; ok {
		return v
	}
	ix.strs[s] = s
	return s
}

// workload is the entry of the workload cluster/uid, made on its first
// finding.
func (ix *Index) workload(key string, w schemas.Workload) *indexedWorkload {
	if iw, ok := ix.wls[key]; ok {
		return iw
	}
	iw := &indexedWorkload{w: w}
	ix.wls[key] = iw
	ix.pending = append(ix.pending, iw)
	return iw
}

// resort puts the workloads a load added in order, at its end (a
// selection meanwhile lists the workloads that were in order before); the
// caller holds the write lock.
func (ix *Index) resort() {
	if len(ix.pending) == 0 {
		return
	}
	ix.order = append(ix.order, ix.pending...)
	ix.pending = nil
	slices.SortFunc(ix.order, func(a, b *indexedWorkload) int {
		return cmp.Or(cmp.Compare(a.w.Cluster, b.w.Cluster), cmp.Compare(a.w.Namespace, b.w.Namespace), cmp.Compare(a.w.Kind, b.w.Kind),
			cmp.Compare(a.w.Name, b.w.Name), cmp.Compare(a.w.UID, b.w.UID))
	})
}

// Follow loads what FINDINGS stored since, every interval, until ctx
// ends; a read that fails is reported to onErr (when set) and tried again
// at the next tick.
func (ix *Index) Follow(ctx context.Context, bus *stream.Bus, interval time.Duration, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := bus.Reader().State(ctx, schemas.StreamFindings)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			err = nil
		} else if err == nil && st.LastSeq > ix.LastSeq() {
			err = ix.Load(ctx, bus)
		}
		if err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
	}
}

// Loaded reports whether a first Load has completed.
func (ix *Index) Loaded() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.loaded
}

// Unreadable counts the events the index could not read.
func (ix *Index) Unreadable() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.bad
}

// LastSeq is the last FINDINGS sequence the index has read.
func (ix *Index) LastSeq() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.lastSeq
}

// OpenCount is the number of open findings of the workload cluster/uid.
func (ix *Index) OpenCount(cluster, uid string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.open[cluster+"/"+uid]
}

// Count is a number of findings with a label: a rule, or a
// cluster/namespace.
type Count struct {
	Label string
	N     int
}

// Selection is what Select found: how many findings the filter selects,
// their counts by rule and by cluster/namespace, and the stream sequences
// of the page asked for.
type Selection struct {
	Total  int
	ByRule []Count
	ByNS   []Count
	picks  []pick
}

// pick is a finding of a page: the sequence of the message that holds
// it, and its name within a finding set.
type pick struct {
	seq           uint64
	rule, subject string
}

// Select counts the findings f selects, in List's order (cluster,
// namespace, kind, name, rule, subject; workloads of one name by uid), and keeps
// those from index from to to (a page) to read back (Events). It walks
// what the index holds once and sorts nothing.
func (ix *Index) Select(f Filter, from, to int) (Selection, error) {
	if err := f.Validate(); err != nil {
		return Selection{}, err
	}
	state := cmp.Or(f.State, StateOpen)
	byRule, byNS := map[string]int{}, map[string]int{}
	var s Selection
	ix.mu.RLock()
	for _, iw := range ix.order {
		if f.Cluster != "" && iw.w.Cluster != f.Cluster || f.Namespace != "" && iw.w.Namespace != f.Namespace {
			continue
		}
		n := 0
		for _, x := range iw.findings {
			if state == StateOpen && !x.open || state == StateResolved && x.open ||
				f.Rule != "" && x.rule != f.Rule || f.Severity != "" && x.severity != f.Severity {
				continue
			}
			if s.Total >= from && s.Total < to {
				s.picks = append(s.picks, pick{x.seq, x.rule, x.subject})
			}
			s.Total++
			n++
			byRule[x.rule]++
		}
		if n > 0 {
			byNS[iw.w.Cluster+"/"+iw.w.Namespace] += n
		}
	}
	ix.mu.RUnlock()
	for _, m := range []struct {
		counts map[string]int
		dst    *[]Count
	}{{byRule, &s.ByRule}, {byNS, &s.ByNS}} {
		for k, n := range m.counts {
			*m.dst = append(*m.dst, Count{Label: k, N: n})
		}
		slices.SortFunc(*m.dst, func(a, b Count) int { return cmp.Compare(a.Label, b.Label) })
	}
	return s, nil
}

// Events reads back the events of the page Select kept, by the stream
// sequences of their messages (one read per message).
func (s Selection) Events(ctx context.Context, bus *stream.Bus) ([]schemas.FindingEvent, error) {
	out := make([]schemas.FindingEvent, 0, len(s.picks))
	var set schemas.FindingSet
	var setSeq uint64
	for _, p := range s.picks {
		ev, err := func() (schemas.FindingEvent, error) {
			if p.seq == setSeq {
				return setEvent(set, p)
			}
			m, err := bus.Reader().GetMsg(ctx, schemas.StreamFindings, p.seq)
			if err == nil && m == nil {
				err = errors.New("no longer stored")
			}
			if err != nil {
				return schemas.FindingEvent{}, err
			}
			if !strings.HasPrefix(m.Subject, schemas.SubjectFindingSetPrefix) {
				return schemas.DecodeFindingEvent(m.Subject, m.Data)
			}
			if set, err = schemas.DecodeFindingSet(m.Subject, m.Data); err != nil {
				return schemas.FindingEvent{}, err
			}
			setSeq = p.seq
			return setEvent(set, p)
		}()
		if err != nil {
			return out, fmt.Errorf("finding at FINDINGS seq %d: %w", p.seq, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// setEvent is the finding p of set.
func setEvent(set schemas.FindingSet, p pick) (schemas.FindingEvent, error) {
	for i, f := range set.Findings {
		if f.Rule == p.rule && f.Subject == p.subject {
			return set.Event(i), nil
		}
	}
	return schemas.FindingEvent{}, fmt.Errorf("%s %s is not in the finding set", p.rule, p.subject)
}
