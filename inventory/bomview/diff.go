package bomview

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Diff is what changed from an older version to a newer one, by bom-ref.
type Diff struct {
	Added, Removed []Component   // in the newer / older BOM only, sorted by (section, ref)
	Changed        []Change      // in both with different content, sorted by ref
	Workload       []FieldChange // changed fields of metadata.component (property:bomstream:inputHash etc.)
}

// Change is one component in both versions whose content differs. A
// component whose bom-ref changed with its version (see the package
// comment) is one Change under its newer bom-ref, with a "ref" field.
type Change struct {
	Ref, Type, Name string // the newer component's
	Section         string // the newer component's section
	Fields          []FieldChange
}

// FieldChange is one field of a component that differs. Field is
// "type", "ref", "version", "purl", "name", "group", "hash:<alg>",
// "property:<name>", "roles", "evidence", "locations" or "dependsOn".
// Old or New is "" when the field was absent on that side; multi-valued
// fields are sorted and joined with ", " (evidence with "; ").
type FieldChange struct{ Field, Old, New string }

// Empty reports whether d shows no change.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && len(d.Workload) == 0
}

// Compare is what changed from older to newer. Components are matched by
// bom-ref; a component only in older and one only in newer are one
// Change when they are the only such pair of their section, type and
// name (see the package comment). Compare does not modify its arguments,
// and its result shares no slices with them but the components' own.
func Compare(older, newer View) Diff {
	olds, news := components(older), components(newer)
	oldByRef, newByRef := byRef(olds), byRef(news)
	type pair struct{ o, n *Component }
	var pairs []pair
	var removed, added []*Component
	for _, o := range olds {
		if n, ok := newByRef[o.Ref]; ok {
			pairs = append(pairs, pair{o, n})
		} else {
			removed = append(removed, o)
		}
	}
	for _, n := range news {
		if _, ok := oldByRef[n.Ref]; !ok {
			added = append(added, n)
		}
	}

	// Pair what a new version renamed: one removed and one added of the
	// same section, type and name.
	removedBy, addedBy := byPairKey(removed), byPairKey(added)
	rename := map[string]string{}
	paired := map[*Component]bool{}
	for _, o := range removed {
		k, ok := pairKey(o)
		if !ok || len(removedBy[k]) != 1 || len(addedBy[k]) != 1 {
			continue
		}
		n := addedBy[k][0]
		pairs = append(pairs, pair{o, n})
		rename[o.Ref] = n.Ref
		paired[o], paired[n] = true, true
	}

	var d Diff
	for _, o := range removed {
		if !paired[o] {
			d.Removed = append(d.Removed, *o)
		}
	}
	for _, n := range added {
		if !paired[n] {
			d.Added = append(d.Added, *n)
		}
	}
	sortComponents(d.Removed)
	sortComponents(d.Added)
	for _, p := range pairs {
		fields := fieldChanges(p.o, p.n, older.Dependencies[p.o.Ref], newer.Dependencies[p.n.Ref], rename)
		if len(fields) > 0 {
			d.Changed = append(d.Changed, Change{Ref: p.n.Ref, Type: p.n.Type, Name: p.n.Name, Section: p.n.Section, Fields: fields})
		}
	}
	slices.SortFunc(d.Changed, func(a, b Change) int { return strings.Compare(a.Ref, b.Ref) })
	d.Workload = fieldChanges(&older.Workload, &newer.Workload, depsOf(older, older.Workload.Ref), depsOf(newer, newer.Workload.Ref), rename)
	return d
}

// components lists v's components, runtimes, models, images, others.
func components(v View) []*Component {
	out := make([]*Component, 0, len(v.Runtimes)+len(v.Models)+len(v.Images)+len(v.Others))
	for _, s := range [][]Component{v.Runtimes, v.Models, v.Images, v.Others} {
		for i := range s {
			out = append(out, &s[i])
		}
	}
	return out
}

// byRef indexes cs by bom-ref; of two with one ref (which Read refuses),
// the first.
func byRef(cs []*Component) map[string]*Component {
	m := make(map[string]*Component, len(cs))
	for _, c := range cs {
		if _, dup := m[c.Ref]; !dup {
			m[c.Ref] = c
		}
	}
	return m
}

// byPairKey groups cs by pairKey.
func byPairKey(cs []*Component) map[string][]*Component {
	m := map[string][]*Component{}
	for _, c := range cs {
		if k, ok := pairKey(c); ok {
			m[k] = append(m[k], c)
		}
	}
	return m
}

// pairKey is what a component keeps when a new version renames it: its
// section, type and name; an oci:// model's name without its digest. A
// component with no name has none.
func pairKey(c *Component) (string, bool) {
	if c.Name == "" {
		return "", false
	}
	name := c.Name
	if c.Section == SectionModel && strings.HasPrefix(name, "oci://") {
		if at := strings.LastIndexByte(name, '@'); at > 0 {
			name = name[:at]
		}
	}
	return sectionOrDefault(c) + "\x00" + c.Type + "\x00" + name, true
}

// sectionOrDefault is c's section, or the one Read would give it.
func sectionOrDefault(c *Component) string {
	if c.Section != "" {
		return c.Section
	}
	return sectionOf(*c)
}

// sectionRank orders the sections in Added and Removed.
func sectionRank(s string) int {
	switch s {
	case SectionRuntime:
		return 0
	case SectionModel:
		return 1
	case SectionImage:
		return 2
	}
	return 3
}

// sortComponents sorts cs by section, then bom-ref.
func sortComponents(cs []Component) {
	slices.SortStableFunc(cs, func(a, b Component) int {
		return cmp.Or(
			cmp.Compare(sectionRank(sectionOrDefault(&a)), sectionRank(sectionOrDefault(&b))),
			strings.Compare(a.Ref, b.Ref))
	})
}

// depsOf is the dependsOn of ref in v; nil for no ref.
func depsOf(v View, ref string) []string {
	if ref == "" {
		return nil
	}
	return v.Dependencies[ref]
}

// fieldChanges lists the fields that differ between o and n, sorted by
// Field; oldDeps and newDeps are their dependsOn, and the refs of
// oldDeps are read through rename before they are compared, so that a
// renamed component shows as a change of its own only.
func fieldChanges(o, n *Component, oldDeps, newDeps []string, rename map[string]string) []FieldChange {
	var out []FieldChange
	add := func(field, old, new string) {
		if old != new {
			out = append(out, FieldChange{Field: field, Old: old, New: new})
		}
	}
	add("ref", o.Ref, n.Ref)
	add("type", o.Type, n.Type)
	add("group", o.Group, n.Group)
	add("name", o.Name, n.Name)
	add("version", o.Version, n.Version)
	add("purl", o.Purl, n.Purl)

	oh, nh := hashesByAlg(o.Hashes), hashesByAlg(n.Hashes)
	for _, alg := range unionKeys(oh, nh) {
		add("hash:"+alg, joined(oh[alg], ", "), joined(nh[alg], ", "))
	}
	op, np := propertiesByName(o.Properties), propertiesByName(n.Properties)
	for _, name := range unionKeys(op, np) {
		add("property:"+name, joined(op[name], ", "), joined(np[name], ", "))
	}
	add("roles", joinedUnique(o.Roles), joinedUnique(n.Roles))
	add("evidence", joined(evidenceStrings(o.Evidence), "; "), joined(evidenceStrings(n.Evidence), "; "))
	add("locations", joined(o.Locations, ", "), joined(n.Locations, ", "))

	renamed := make([]string, len(oldDeps))
	for i, r := range oldDeps {
		if to, ok := rename[r]; ok {
			r = to
		}
		renamed[i] = r
	}
	if joined(renamed, ", ") != joined(newDeps, ", ") {
		out = append(out, FieldChange{Field: "dependsOn", Old: joined(oldDeps, ", "), New: joined(newDeps, ", ")})
	}
	slices.SortFunc(out, func(a, b FieldChange) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// hashesByAlg groups the contents of hs by algorithm.
func hashesByAlg(hs []Hash) map[string][]string {
	m := make(map[string][]string, len(hs))
	for _, h := range hs {
		m[h.Alg] = append(m[h.Alg], h.Content)
	}
	return m
}

// propertiesByName groups the values of ps by name, but bomstream:role
// (the field "roles").
func propertiesByName(ps []Property) map[string][]string {
	m := make(map[string][]string, len(ps))
	for _, p := range ps {
		if p.Name != propRole {
			m[p.Name] = append(m[p.Name], p.Value)
		}
	}
	return m
}

// unionKeys is the sorted keys of a and b.
func unionKeys(a, b map[string][]string) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// joined is a sorted copy of values joined with sep.
func joined(values []string, sep string) string {
	s := slices.Clone(values)
	slices.Sort(s)
	return strings.Join(s, sep)
}

// joinedUnique is the distinct values, sorted, joined with ", ".
func joinedUnique(values []string) string {
	s := slices.Clone(values)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ", ")
}

// evidenceStrings is each evidence as String writes it.
func evidenceStrings(ev []Evidence) []string {
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = e.String()
	}
	return out
}

// String is e in one line: "version: tag v0.9.2 (manifest-analysis 0.6)
// concluded 0.9.2".
func (e Evidence) String() string {
	var b strings.Builder
	b.WriteString(e.Field)
	b.WriteString(":")
	if e.Value != "" {
		b.WriteString(" ")
		b.WriteString(e.Value)
	}
	b.WriteString(" (")
	if e.Technique != "" {
		b.WriteString(e.Technique)
		b.WriteString(" ")
	}
	b.WriteString(strconv.FormatFloat(e.Confidence, 'g', -1, 64))
	b.WriteString(")")
	if e.Concluded != "" {
		b.WriteString(" concluded ")
		b.WriteString(e.Concluded)
	}
	return b.String()
}
