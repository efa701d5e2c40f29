package corpus

import (
	_ "embed"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// Known is one entry of known.yaml: a case where bomstream and its table
// disagree on a field, and which of the two is wrong.
type Known struct {
	Corpus string `json:"corpus"`
	// Case is Case.ID(): the file, or file#Kind/Name.
	Case  string `json:"case"`
	Field string `json:"field"`
	// Wrong is "table" (the table is wrong: the field counts right) or
	// "bomstream" (a known miss: it counts wrong and does not fail).
	Wrong  string `json:"wrong"`
	Reason string `json:"reason"`
}

// Who is wrong in a Known entry.
const (
	WrongTable     = "table"
	WrongBomstream = "bomstream"
)

//go:embed known.yaml
var knownYAML []byte

// LoadKnown reads known.yaml and checks every entry.
func LoadKnown() ([]Known, error) {
	var ks []Known
	if err := yaml.UnmarshalStrict(knownYAML, &ks); err != nil {
		return nil, fmt.Errorf("known.yaml: %w", err)
	}
	for i, k := range ks {
		if k.Corpus == "" || k.Case == "" || !slices.Contains(Fields, k.Field) || k.Reason == "" ||
			k.Wrong != WrongTable && k.Wrong != WrongBomstream {
			return nil, fmt.Errorf("known.yaml entry %d (%s %s): corpus, case, a field of %v, wrong (table or bomstream) and reason are required", i, k.Corpus, k.Case, Fields)
		}
	}
	return ks, nil
}

// Judged is an outcome with its known misses applied.
type Judged struct {
	Outcome
	// Excused are the misses the table got wrong (they count right).
	Excused []Known
	// KnownMisses are bomstream's known misses among Misses.
	KnownMisses []Known
	// Unexpected are the misses no entry explains: they fail the run.
	Unexpected []Miss
	// Stale are entries for this case whose field no longer misses.
	Stale []Known
	// LoadErr is what could not be read of the case's file.
	LoadErr error
}

// Right reports whether the case is right once the table's own errors
// are set aside.
func (j Judged) Right() bool { return len(j.Misses) == len(j.Excused) }

// Judge applies the known entries of o's case.
func Judge(o Outcome, known []Known) Judged {
	j := Judged{Outcome: o}
	var mine []Known
	for _, k := range known {
		if k.Corpus == o.Case.Corpus && k.Case == o.Case.ID() {
			mine = append(mine, k)
		}
	}
	for _, m := range o.Misses {
		i := slices.IndexFunc(mine, func(k Known) bool { return k.Field == m.Field })
		switch {
		case i < 0:
			j.Unexpected = append(j.Unexpected, m)
		case mine[i].Wrong == WrongTable:
			j.Excused = append(j.Excused, mine[i])
		default:
			j.KnownMisses = append(j.KnownMisses, mine[i])
		}
	}
	for _, k := range mine {
		if !o.Missed(k.Field) {
			j.Stale = append(j.Stale, k)
		}
	}
	return j
}

// Evaluate renders every case's file under root once and judges each case.
// A file that fails to render is an error; documents that cannot be read
// are in the judged case's LoadErr.
func Evaluate(r *Renderer, root string, cases []Case, known []Known) ([]Judged, error) {
	type file struct {
		rs      []Rendered
		loadErr error
	}
	rendered := map[string]file{}
	out := make([]Judged, 0, len(cases))
	for _, c := range cases {
		f, ok := rendered[c.File]
		if !ok {
			var err error
			if f.rs, f.loadErr, err = r.File(root, c.File); err != nil {
				return nil, fmt.Errorf("%s corpus: %w", c.Corpus, err)
			}
			rendered[c.File] = f
		}
		j := Judge(Check(c, f.rs), known)
		j.LoadErr = f.loadErr
		out = append(out, j)
	}
	return out, nil
}
