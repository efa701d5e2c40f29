package findings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
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
// its order need, and the stream sequence of its last event; the events a
// page shows are read back by sequence (Page). It is safe for concurrent
// use: one loader (Load, Follow), any number of readers.
type Index struct {
	mu      sync.RWMutex
	byKey   map[uint64]*indexed // by the hash of the finding's subject
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
	seq                     uint64 // of its last event
	open                    bool
	rule, severity, subject string
}

// indexedWorkload is a workload and its findings, by rule then subject.
type indexedWorkload struct {
	w        schemas.Workload
	findings []*indexed
}

// NewIndex returns an empty index; Load fills it.
func NewIndex() *Index {
	return &Index{byKey: map[uint64]*indexed{}, open: map[string]int{}, strs: map[string]string{}, wls: map[string]*indexedWorkload{}}
}

func subjectKey(subject string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(subject))
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
	err := bus.Messages(ctx, schemas.StreamFindings, "", from, func(m *jetstream.RawStreamMsg) error {
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

// decodedEvent is one message of FINDINGS, decoded outside the lock.
type decodedEvent struct {
	raw *jetstream.RawStreamMsg
	ev  schemas.FindingEvent
	err error
}

// decode reads the event of d's message.
func (d *decodedEvent) decode() {
	d.ev, d.err = schemas.DecodeFindingEvent(d.raw.Subject, d.raw.Data)
}

// apply adds one decoded event; the caller holds the write lock.
func (ix *Index) apply(d *decodedEvent) {
	m, ev := d.raw, d.ev
	ix.lastSeq = max(ix.lastSeq, m.Sequence)
	if d.err != nil || ev.State != schemas.FindingOpened && ev.State != schemas.FindingResolved {
		ix.bad++
		return
	}
	key := subjectKey(m.Subject)
	wk := ev.Workload.Cluster + "/" + ev.Workload.UID
	f := ix.byKey[key]
	if f == nil {
		f = &indexed{rule: ix.intern(ev.Rule), subject: ev.Subject} // a finding's name never changes
		ix.byKey[key] = f
		ix.workload(wk, ev.Workload).add(f)
	} else if f.seq > m.Sequence {
		return
	}
	if f.open {
		if ix.open[wk]--; ix.open[wk] <= 0 {
			delete(ix.open, wk)
		}
	}
	f.seq, f.open = m.Sequence, ev.State == schemas.FindingOpened
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
		st, err := bus.State(ctx, schemas.StreamFindings)
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
	seqs   []uint64
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
				s.seqs = append(s.seqs, x.seq)
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

// Events reads back the events of the page Select kept, by their stream
// sequences.
func (s Selection) Events(ctx context.Context, bus *stream.Bus) ([]schemas.FindingEvent, error) {
	out := make([]schemas.FindingEvent, 0, len(s.seqs))
	for _, seq := range s.seqs {
		m, err := bus.GetMsg(ctx, schemas.StreamFindings, seq)
		if err == nil && m == nil {
			err = errors.New("no longer stored")
		}
		var ev schemas.FindingEvent
		if err == nil {
			ev, err = schemas.DecodeFindingEvent(m.Subject, m.Data)
		}
		if err != nil {
			return out, fmt.Errorf("finding at FINDINGS seq %d: %w", seq, err)
		}
		out = append(out, ev)
	}
	return out, nil
}
