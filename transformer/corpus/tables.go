package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// Corpus names.
const (
	Realworld = "realworld"
	Upstream  = "upstream"
	Own       = "own"
)

// realworldEntry is one entry of the realworld corpus's index.json.
type realworldEntry struct {
	File    string   `json:"file"`
	Repo    string   `json:"repo"`
	Path    string   `json:"path"`
	Commit  string   `json:"commit"`
	License string   `json:"license"`
	Kinds   []string `json:"kinds"`
	Expect  struct {
		Serving  *bool    `json:"serving"`
		Runtime  []string `json:"runtime"`
		Version  string   `json:"version"`
		Models   []string `json:"models"`
		Revision string   `json:"revision"`
		Roles    []string `json:"roles"`
		NotHF    bool     `json:"not_hf"`
	} `json:"expect"`
	Notes string `json:"notes"`
}

// LoadRealworld reads root/index.json: one case per file.
func LoadRealworld(root string) ([]Case, error) {
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("realworld corpus: %w", err)
	}
	var es []realworldEntry
	if err := json.Unmarshal(b, &es); err != nil {
		return nil, fmt.Errorf("realworld corpus: index.json: %w", err)
	}
	out := make([]Case, 0, len(es))
	for i, e := range es {
		if e.File == "" {
			return nil, fmt.Errorf("realworld corpus: index.json entry %d has no file", i)
		}
		x := e.Expect
		out = append(out, Case{Corpus: Realworld, File: e.File, Note: e.Notes, Expect: Expect{
			Serving: x.Serving, RuntimeAny: x.Runtime, Version: x.Version, Models: x.Models,
			Revision: x.Revision, Roles: x.Roles, NotHF: x.NotHF,
		}})
	}
	return out, nil
}

// Row is one row of a table of this project's (transformer/testdata/expected,
// transformer/testdata/upstream.yaml): a workload of a file and what
// bomstream must find in it.
type Row struct {
	// Row is the INDEX.md row of an upstream manifest.
	Row      int      `json:"row,omitempty"`
	File     string   `json:"file"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name,omitempty"`
	Runtimes []string `json:"runtimes,omitempty"` // name@version/confidence, exact set
	Models   []string `json:"models,omitempty"`   // exact set
	Revision string   `json:"revision,omitempty"` // pinned revision of every model
	Roles    []string `json:"roles,omitempty"`    // must all be present
	Skipped  bool     `json:"skipped,omitempty"`  // no BOM: it serves nothing
	Note     string   `json:"note,omitempty"`
}

// Case is the row as a case of corpus.
func (r Row) Case(corpus string) Case {
	serving := !r.Skipped
	e := Expect{Serving: &serving, Runtimes: r.Runtimes, Models: r.Models, ModelsExact: true, Revision: r.Revision, Roles: r.Roles}
	if !r.Skipped && e.Revision == "" && len(r.Models) > 0 {
		e.Revision = "-"
	}
	if !r.Skipped && len(r.Runtimes) == 0 {
		// No runtime: the exact set is empty.
		e.Runtimes = []string{}
	}
	return Case{Corpus: corpus, File: r.File, Kind: r.Kind, Name: r.Name, Expect: e, Note: r.Note}
}

// LoadRows reads every table matching glob (YAML lists of Row), strictly.
func LoadRows(glob string) ([]Row, error) {
	paths, err := filepath.Glob(glob)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no table matches %s", glob)
	}
	sort.Strings(paths)
	var out []Row
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var rows []Row
		if err := yaml.UnmarshalStrict(b, &rows); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// Cases turns rows into cases of corpus.
func Cases(corpus string, rows []Row) []Case {
	out := make([]Case, len(rows))
	for i, r := range rows {
		out[i] = r.Case(corpus)
	}
	return out
}
