package inventory

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/imageref"
	"github.com/bomstream/bomstream/schemas/versions"
)

// Query selects workloads. Filters of different fields combine (all must
// hold); several values of one field are alternatives (any may hold). The
// zero Query lists every serving workload now.
type Query struct {
	Models   []string         // model id or glob (* and ?), case-insensitive
	Runtimes []versions.Range // runtime name with version constraints
	Digests  []string         // image digest, sha256:<hex> or at least 12 hex digits of it
	Images   []string         // image reference (registry defaults as a pull does), or a glob over it
	// Clusters, Namespaces and Kinds are exact; a kind is case-insensitive.
	Clusters, Namespaces, Kinds []string
	// Unpinned keeps workloads serving a model without a pinned revision.
	Unpinned bool
	// InferredOnly keeps workloads none of whose runtimes is declared: only
	// their images say what serves.
	InferredOnly bool
	// ChangedSince keeps workloads whose version in effect was observed at
	// or after it.
	ChangedSince time.Time
	// At is the point in time asked about; zero is now.
	At time.Time
	// States are the serving states listed (StateServing, StateDeleted,
	// StateNotServing); none means StateServing only.
	States []string

	// Check, when set, is called last, with each entry that passed every
	// other filter: it may annotate the entry (Entry.Notes) and says
	// whether to keep it. Policy findings plug in here (`find
	// --findings`). It is called under the index's read lock: it must not
	// call the index.
	Check func(*Entry) bool

	models []*regexp.Regexp
	images []imageMatcher
}

// Entry is one workload as a query answers: its identity, its state at the
// query's point in time, and the facts of the version in effect (for a
// tombstoned workload, of its last BOM).
type Entry struct {
	Cluster    string `json:"cluster"`
	Namespace  string `json:"namespace"`
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	State      string `json:"state"`
	// FirstSeen is when the workload's first version was observed;
	// LastChanged when the version in effect was.
	FirstSeen   time.Time `json:"firstSeen"`
	LastChanged time.Time `json:"lastChanged"`
	ChangeSeq   uint64    `json:"changeSeq"`
	StreamSeq   uint64    `json:"streamSeq"`
	BomHash     string    `json:"bomHash,omitempty"`
	Facts
	Unreadable string `json:"unreadable,omitempty"`
	// Notes are what Query.Check added (findings), by name.
	Notes map[string]any `json:"notes,omitempty"`
}

// Key is the entry's name: CLUSTER/NAMESPACE/KIND/NAME.
func (e *Entry) Key() string {
	return e.Cluster + "/" + e.Namespace + "/" + e.Kind + "/" + e.Name
}

// Find answers q, in name order.
func (ix *Index) Find(q Query) []Entry {
	out, _ := ix.FindPage(q, 0, -1)
	return out
}

// FindPage answers q in name order, a page at a time: the entries from
// offset on, at most limit of them (all when limit < 0), and how many
// there are in all. Entries outside the page are counted, not built.
func (ix *Index) FindPage(q Query, offset, limit int) (page []Entry, total int) {
	q.compile()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, w := range ix.sorted {
		i := w.at(q.At)
		if i < 0 {
			continue
		}
		v := &w.Versions[i]
		if !q.state(v.State()) || !q.ChangedSince.IsZero() && v.Time.Before(q.ChangedSince) || !q.identity(w) {
			continue
		}
		if !q.facts(factsOf(w, i)) {
			continue
		}
		inPage := total >= offset && (limit < 0 || total < offset+limit)
		if q.Check == nil && !inPage {
			total++
			continue
		}
		e, _ := entryOf(w, i)
		if q.Check != nil && !q.Check(&e) {
			continue
		}
		if inPage {
			page = append(page, e)
		}
		total++
	}
	return page, total
}

// factsOf is the version whose facts w at its version i shows: i itself,
// or for a tombstone the last BOM before it.
func factsOf(w *Workload, i int) *Version {
	facts := &w.Versions[i]
	for j := i; facts.Tombstone != "" && j > 0; {
		j--
		facts = &w.Versions[j]
	}
	return facts
}

// entryOf is w at its version i, with the version whose facts it shows
// (for a tombstone, the last BOM before it).
func entryOf(w *Workload, i int) (Entry, *Version) {
	v := &w.Versions[i]
	facts := factsOf(w, i)
	e := Entry{Cluster: w.ID.Cluster, Namespace: w.ID.Namespace, Kind: w.ID.Kind, APIVersion: w.ID.APIVersion,
		Name: w.ID.Name, UID: w.ID.UID, State: v.State(), FirstSeen: w.firstSeen(), LastChanged: v.Time,
		ChangeSeq: v.ChangeSeq, StreamSeq: v.StreamSeq, BomHash: v.BomHash, Facts: facts.Facts, Unreadable: facts.Unreadable}
	return e, facts
}

// EntryAt is the workload as a query at t (zero: now) lists it, in any
// state; false when it had no version yet.
func (w *Workload) EntryAt(t time.Time) (Entry, bool) {
	i := w.at(t)
	if i < 0 {
		return Entry{}, false
	}
	e, _ := entryOf(w, i)
	return e, true
}

// VersionAt is the version in effect at t (zero: now).
func (w *Workload) VersionAt(t time.Time) (Version, bool) {
	i := w.at(t)
	if i < 0 {
		return Version{}, false
	}
	return w.Versions[i], true
}

// KeepOpenFindings narrows q to the workloads that have open findings in
// open, each annotated with them (Entry.Notes["findings"]): `find
// --findings`.
func (q *Query) KeepOpenFindings(open []schemas.FindingEvent) {
	byUID := map[string][]schemas.FindingEvent{}
	for _, ev := range open {
		k := ev.Workload.Cluster + "/" + ev.Workload.UID
		byUID[k] = append(byUID[k], ev)
	}
	prev := q.Check
	q.Check = func(e *Entry) bool {
		if prev != nil && !prev(e) {
			return false
		}
		fs := byUID[e.Cluster+"/"+e.UID]
		if len(fs) == 0 {
			return false
		}
		if e.Notes == nil {
			e.Notes = map[string]any{}
		}
		e.Notes["findings"] = fs
		return true
	}
}

// BOMAt is the version whose BOM was in effect at t (zero: now), as `get
// --at` prints it, or why there was none: before the first version, after
// a tombstone, or no version at all.
func (w *Workload) BOMAt(t time.Time) (Version, error) {
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	v, ok := w.VersionAt(t)
	switch {
	case len(w.Versions) == 0:
		return v, errors.New("no BOM: it serves no model, or the store lost its BOMs (`bomstream check` tells which)")
	case !ok:
		return v, fmt.Errorf("no BOM at %s (the first is from %s)", stamp(t), stamp(w.Versions[0].Time))
	}
	switch v.Tombstone {
	case "":
		return v, nil
	case schemas.TombstoneNotServing:
		return v, errors.New("not serving since " + stamp(v.Time))
	default:
		return v, errors.New(v.Tombstone + " at " + stamp(v.Time))
	}
}

// compile readies the globs; ParseQuery has checked them.
func (q *Query) compile() {
	if len(q.models) != len(q.Models) {
		q.models = q.models[:0]
		for _, m := range q.Models {
			q.models = append(q.models, globRegexp(m))
		}
	}
	if len(q.images) != len(q.Images) {
		q.images = q.images[:0]
		for _, im := range q.Images {
			q.images = append(q.images, newImageMatcher(im))
		}
	}
}

func (q *Query) state(s string) bool {
	if len(q.States) == 0 {
		return s == StateServing
	}
	return slices.Contains(q.States, s)
}

func (q *Query) identity(w *Workload) bool {
	return anyOf(q.Clusters, func(c string) bool { return c == w.ID.Cluster }) &&
		anyOf(q.Namespaces, func(ns string) bool { return ns == w.ID.Namespace }) &&
		anyOf(q.Kinds, func(k string) bool { return strings.EqualFold(k, w.ID.Kind) })
}

// facts checks the filters on what a BOM says; a tombstone or an
// unreadable BOM says nothing, and passes only when none is asked.
func (q *Query) facts(v *Version) bool {
	asked := len(q.models) > 0 || len(q.Runtimes) > 0 || len(q.Digests) > 0 || len(q.images) > 0 || q.Unpinned || q.InferredOnly
	if !asked {
		return true
	}
	if v.Tombstone != "" || v.Unreadable != "" {
		return false
	}
	return anyOf(q.models, func(re *regexp.Regexp) bool {
		return slices.ContainsFunc(v.Models, func(m Model) bool { return re.MatchString(m.ID) })
	}) && anyOf(q.Runtimes, func(r versions.Range) bool {
		for i, rt := range v.Runtimes {
			if r.Admits(rt.Name, v.parsed[i].v, v.parsed[i].ok) {
				return true
			}
		}
		return false
	}) && anyOf(q.Digests, func(d string) bool {
		return slices.ContainsFunc(v.Images, func(im Image) bool { return digestMatch(d, im.Digests) })
	}) && anyOf(q.images, func(m imageMatcher) bool {
		return slices.ContainsFunc(v.Images, m.match)
	}) && (!q.Unpinned || slices.ContainsFunc(v.Models, func(m Model) bool { return m.Unpinned })) &&
		(!q.InferredOnly || inferredOnly(v.Runtimes))
}

// inferredOnly: runtimes were found, and none is declared.
func inferredOnly(rts []Runtime) bool {
	return len(rts) > 0 && !slices.ContainsFunc(rts, func(r Runtime) bool { return r.Confidence == "declared" })
}

func anyOf[T any](xs []T, f func(T) bool) bool {
	return len(xs) == 0 || slices.ContainsFunc(xs, f)
}

// digestMatch: want is a whole digest, or a prefix of at least 12 hex
// digits of one (with or without "sha256:").
func digestMatch(want string, digests []string) bool {
	want = strings.ToLower(strings.TrimPrefix(want, "sha256:"))
	for _, d := range digests {
		if strings.HasPrefix(strings.TrimPrefix(d, "sha256:"), want) {
			return true
		}
	}
	return false
}

// globRegexp turns a glob (* any text, ? one character) into an anchored,
// case-insensitive expression.
func globRegexp(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?i)^")
	for _, r := range g {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// imageMatcher matches an image by glob over its reference, or by the
// repository (and tag, when given) of a reference.
type imageMatcher struct {
	glob   *regexp.Regexp
	name   string // registry/repository
	tag    string
	digest string
}

func newImageMatcher(s string) imageMatcher {
	if strings.ContainsAny(s, "*?") {
		return imageMatcher{glob: globRegexp(s)}
	}
	img, err := imageref.ParseImage(s)
	if err != nil {
		return imageMatcher{glob: globRegexp(s)}
	}
	return imageMatcher{name: img.Name(), tag: img.Tag, digest: img.Digest}
}

func (m imageMatcher) match(im Image) bool {
	if m.glob != nil {
		return m.glob.MatchString(im.Ref)
	}
	ref := im.Ref
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	name, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	return name == m.name && (m.tag == "" || tag == m.tag) && (m.digest == "" || digestMatch(m.digest, im.Digests))
}

// validImage is the check ParseQuery makes of an image filter.
func validImage(s string) error {
	if strings.ContainsAny(s, "*?") {
		return nil
	}
	if _, err := imageref.ParseImage(s); err != nil {
		return fmt.Errorf("%q is neither a glob nor an image reference: %w", s, err)
	}
	return nil
}
