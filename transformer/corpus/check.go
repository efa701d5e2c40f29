package corpus

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bomstream/bomstream/transformer"
)

// Fields a case can be checked on, in report order.
const (
	FieldServing  = "serving"
	FieldRuntime  = "runtime"
	FieldVersion  = "version"
	FieldModels   = "models"
	FieldRevision = "revision"
	FieldRoles    = "roles"
	FieldNotHF    = "not_hf"
)

// Fields is every field, in report order.
var Fields = []string{FieldServing, FieldRuntime, FieldVersion, FieldModels, FieldRevision, FieldRoles, FieldNotHF}

// Miss is one field of a case that does not hold.
type Miss struct {
	Field string
	Want  string
	Got   string
}

func (m Miss) String() string { return fmt.Sprintf("%s: want %s, got %s", m.Field, m.Want, m.Got) }

// Outcome is a case checked: the fields it states and the ones that miss.
type Outcome struct {
	Case   Case
	Stated []string
	Misses []Miss
	// Served says whether bomstream rendered a BOM for the case.
	Served bool
	// Got summarizes what bomstream found, for reports.
	Got string
}

// Right reports whether every stated field holds.
func (o Outcome) Right() bool { return len(o.Misses) == 0 }

// Missed reports whether field misses.
func (o Outcome) Missed(field string) bool {
	return slices.ContainsFunc(o.Misses, func(m Miss) bool { return m.Field == field })
}

// Check holds the workloads rendered from the case's file (all of them;
// Check picks the case's own when it names a kind) to the case.
func Check(c Case, all []Rendered) Outcome {
	var rs []Rendered
	for _, x := range all {
		if c.Kind != "" && x.Workload.Kind != c.Kind || c.Name != "" && x.Workload.Name != c.Name {
			continue
		}
		if x.Result.BOM != nil {
			rs = append(rs, x)
		}
	}
	o := Outcome{Case: c, Served: len(rs) > 0, Got: describe(rs)}
	e := c.Expect
	check := func(field string, stated bool, ok bool, want, got string) {
		if !stated {
			return
		}
		o.Stated = append(o.Stated, field)
		if !ok {
			o.Misses = append(o.Misses, Miss{Field: field, Want: want, Got: got})
		}
	}
	if e.Serving != nil {
		check(FieldServing, true, *e.Serving == o.Served, fmt.Sprint(*e.Serving), fmt.Sprint(o.Served))
	}
	// Not serving, or undecided and not served: the rest does not apply.
	if e.Serving != nil && !*e.Serving || e.Serving == nil && !o.Served {
		return o
	}
	runtimes := runtimesOf(rs)
	check(FieldRuntime, e.Runtimes != nil || len(e.RuntimeAny) > 0,
		runtimeHolds(e, runtimes), runtimeWant(e), fmt.Sprint(runtimes))
	check(FieldVersion, e.Version != "", versionHolds(e.Version, rs), e.Version, fmt.Sprint(runtimes))
	models := modelsIn(rs)
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Name
	}
	check(FieldModels, len(e.Models) > 0 || e.ModelsExact, modelsHold(e, names), fmt.Sprint(e.Models), fmt.Sprint(names))
	check(FieldRevision, e.Revision != "", revisionHolds(e.Revision, models), e.Revision, revisions(models))
	var roles []string
	for _, x := range rs {
		roles = append(roles, x.Result.Summary.Roles...)
	}
	check(FieldRoles, len(e.Roles) > 0, allIn(e.Roles, roles), fmt.Sprint(e.Roles), fmt.Sprint(roles))
	var hf []string
	for _, m := range models {
		if m.HF() {
			hf = append(hf, m.Name)
		}
	}
	check(FieldNotHF, e.NotHF, len(hf) == 0, "no Hugging Face model", fmt.Sprint(hf))
	return o
}

// runtimesOf lists the runtimes of rs as "name@version/confidence".
func runtimesOf(rs []Rendered) []string {
	var out []string
	for _, x := range rs {
		for _, r := range x.Result.Summary.Runtimes {
			out = append(out, r.Name+"@"+r.Version+"/"+r.Confidence)
		}
	}
	return out
}

func runtimeWant(e Expect) string {
	if e.Runtimes != nil {
		return fmt.Sprint(e.Runtimes)
	}
	return "one of " + fmt.Sprint(e.RuntimeAny)
}

func runtimeHolds(e Expect, got []string) bool {
	if e.Runtimes != nil {
		return sameSet(e.Runtimes, got)
	}
	for _, g := range got {
		name, _, _ := strings.Cut(g, "@")
		for _, w := range e.RuntimeAny {
			if strings.Contains(strings.ToLower(name), strings.ToLower(w)) {
				return true
			}
		}
	}
	return len(e.RuntimeAny) == 0
}

func versionHolds(want string, rs []Rendered) bool {
	want = strings.TrimPrefix(want, "v")
	for _, x := range rs {
		for _, r := range x.Result.Summary.Runtimes {
			if strings.TrimPrefix(r.Version, "v") == want {
				return true
			}
		}
	}
	return false
}

// modelsIn is every model of rs, once by name.
func modelsIn(rs []Rendered) []Model {
	var out []Model
	for _, x := range rs {
		for _, m := range x.Models {
			if !slices.ContainsFunc(out, func(o Model) bool { return o.Name == m.Name }) {
				out = append(out, m)
			}
		}
	}
	return out
}

func modelsHold(e Expect, got []string) bool {
	if e.ModelsExact {
		return sameSet(e.Models, got)
	}
	for _, w := range e.Models {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.EqualFold(g, w) }) {
			return false
		}
	}
	return true
}

func revisionHolds(want string, ms []Model) bool {
	if len(ms) == 0 {
		return false
	}
	for _, m := range ms {
		if want == "-" && m.Revision != "" || want != "-" && m.Revision != want {
			return false
		}
	}
	return true
}

func revisions(ms []Model) string {
	var out []string
	for _, m := range ms {
		r := m.Revision
		if r == "" {
			r = "unpinned"
		}
		out = append(out, m.Name+"@"+r)
	}
	return fmt.Sprint(out)
}

func allIn(want, got []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	sort.Strings(x)
	sort.Strings(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// describe is a one-line account of what was rendered.
func describe(rs []Rendered) string {
	if len(rs) == 0 {
		return "no BOM"
	}
	var parts []string
	for _, x := range rs {
		s := x.Workload.Kind + "/" + x.Workload.Name + " " + summary(x.Result.Summary)
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func summary(s transformer.Summary) string {
	var rt []string
	for _, r := range s.Runtimes {
		rt = append(rt, r.Name+"@"+r.Version+"/"+r.Confidence)
	}
	return fmt.Sprintf("runtimes %v models %v roles %v", rt, s.Models, s.Roles)
}
