package inventory

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/versions"
)

// Index holds every workload's history of BOM facts, read from BOMS. It is
// safe for concurrent use: one loader (Load, or a follow.Follower) writes,
// any number of queries read.
type Index struct {
	mu      sync.RWMutex
	byUID   map[string]*Workload // cluster/uid
	byName  map[string]*Workload // cluster/namespace/kind/name: the last one of that name
	sorted  []*Workload          // by name key
	added   []*Workload          // new since the last resort: not in sorted yet
	renamed bool                 // a workload of sorted changed its name since
	lastSeq uint64               // the last BOMS sequence read
	stats   Stats

	// Owned by the loader (one at a time, under mu's write lock).
	strs   map[string]string        // interned strings
	parsed map[string]parsedVersion // runtime versions, parsed once
}

// Stats is what an Index holds and what it could not read.
type Stats struct {
	Workloads int    `json:"workloads"`
	Versions  int    `json:"versions"`
	LastSeq   uint64 `json:"lastSeq"`
	// Skipped counts the BOMS messages the codec refused (no identity, no
	// version); LastSkipped says why the last one was.
	Skipped     int    `json:"skipped"`
	LastSkipped string `json:"lastSkipped,omitempty"`
	// Unreadable counts BOMs whose body could not be read for facts.
	Unreadable int `json:"unreadable"`
}

// New returns an empty index; Load fills it.
func New() *Index {
	return &Index{
		byUID:  map[string]*Workload{},
		byName: map[string]*Workload{},
		strs:   map[string]string{},
		parsed: map[string]parsedVersion{},
	}
}

// Stats reports what the index holds.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s := ix.stats
	s.Workloads, s.LastSeq = len(ix.byUID), ix.lastSeq
	return s
}

// apply adds one decoded message; the caller holds the write lock.
func (ix *Index) apply(d *decoded) {
	if d.seq > ix.lastSeq {
		ix.lastSeq = d.seq
	}
	if d.err != nil {
		ix.stats.Skipped++
		ix.stats.LastSkipped = d.err.Error()
		return
	}
	m := &d.msg
	id := m.Workload
	id.Cluster, id.Namespace, id.Kind = ix.intern(id.Cluster), ix.intern(id.Namespace), ix.intern(id.Kind)
	id.APIVersion = ix.intern(id.APIVersion)
	uidKey := id.Cluster + "/" + id.UID
	w := ix.byUID[uidKey]
	if w == nil {
		w = &Workload{ID: id}
		ix.byUID[uidKey] = w
		ix.added = append(ix.added, w)
	}
	v := Version{Time: d.stored, StreamSeq: d.seq, ChangeSeq: m.ChangeSeq, Tombstone: m.Tombstone,
		BomHash: m.BomHash, InputHash: m.InputHash, Facts: ix.internFacts(d.facts)}
	if !m.EventTime.IsZero() {
		v.Time = m.EventTime
	}
	if d.factsErr != nil {
		v.Unreadable = d.factsErr.Error()
		ix.stats.Unreadable++
	}
	v.parsed = make([]parsedVersion, len(v.Runtimes))
	for i, rt := range v.Runtimes {
		v.parsed[i] = ix.parse(rt.Version)
	}
	if !w.add(v) {
		return
	}
	ix.stats.Versions++
	if w.Versions[len(w.Versions)-1].ChangeSeq == v.ChangeSeq && w.ID != id {
		if ix.byName[nameKey(w.ID)] == w {
			delete(ix.byName, nameKey(w.ID))
		}
		w.ID = id // the latest identity
		ix.renamed = true
	}
	nk := nameKey(w.ID)
	if cur := ix.byName[nk]; cur == nil || cur == w || latestTime(cur).Before(latestTime(w)) {
		ix.byName[nk] = w
	}
}

func latestTime(w *Workload) time.Time { return w.Versions[len(w.Versions)-1].Time }

func (ix *Index) parse(s string) parsedVersion {
	p, ok := ix.parsed[s]
	if !ok {
		v, err := versions.Parse(s)
		p = parsedVersion{v: v, ok: err == nil}
		ix.parsed[s] = p
	}
	return p
}

func (ix *Index) intern(s string) string {
	if v, ok := ix.strs[s]; ok {
		return v
	}
	ix.strs[s] = s
	return s
}

// internFacts shares the strings that repeat across BOMs (names,
// versions, confidences, model ids, image references).
func (ix *Index) internFacts(f Facts) Facts {
	for i := range f.Runtimes {
		r := &f.Runtimes[i]
		r.Name, r.Version, r.Confidence = ix.intern(r.Name), ix.intern(r.Version), ix.intern(r.Confidence)
	}
	for i := range f.Models {
		m := &f.Models[i]
		m.ID, m.Confidence = ix.intern(m.ID), ix.intern(m.Confidence)
		for j := range m.Revisions {
			m.Revisions[j] = ix.intern(m.Revisions[j])
		}
	}
	for i := range f.Images {
		im := &f.Images[i]
		im.Ref, im.Confidence = ix.intern(im.Ref), ix.intern(im.Confidence)
	}
	return f
}

// nameKey is how a workload is named across the index, and its sort key.
func nameKey(w schemas.Workload) string {
	return w.Cluster + "/" + w.Namespace + "/" + w.Kind + "/" + w.Name
}

// resort orders every workload by name key (then uid) after a load added
// one or renamed one: the few a follower adds go in their place, many or
// a rename sort them all. The caller holds the write lock.
func (ix *Index) resort() {
	if !ix.renamed && len(ix.added) <= len(ix.sorted)/8 {
		for _, w := range ix.added {
			i, _ := slices.BinarySearchFunc(ix.sorted, w, compareWorkloads)
			ix.sorted = slices.Insert(ix.sorted, i, w)
		}
		ix.added = ix.added[:0]
		return
	}
	ix.renamed, ix.added = false, ix.added[:0]
	ws := ix.sorted[:0]
	for _, w := range ix.byUID {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, compareWorkloads)
	ix.sorted = ws
}

func compareWorkloads(a, b *Workload) int {
	if c := strings.Compare(nameKey(a.ID), nameKey(b.ID)); c != 0 {
		return c
	}
	return strings.Compare(a.ID.UID, b.ID.UID)
}

// Workload returns a copy of the workload called cluster/namespace/kind/name
// (the last one of that name, when it was deleted and re-created).
func (ix *Index) Workload(cluster, namespace, kind, name string) (Workload, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	w := ix.byName[cluster+"/"+namespace+"/"+kind+"/"+name]
	if w == nil {
		return Workload{}, false
	}
	return Workload{ID: w.ID, Versions: slices.Clone(w.Versions)}, true
}

// ChangesPerDay counts the versions (BOMs and tombstones) observed on each
// day, by UTC midnight.
func (ix *Index) ChangesPerDay() map[time.Time]int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := map[time.Time]int{}
	for _, w := range ix.byUID {
		for i := range w.Versions {
			t := w.Versions[i].Time.UTC()
			out[time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)]++
		}
	}
	return out
}
