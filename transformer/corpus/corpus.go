package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/transformer"
)

// Expect is what a table says of a case. A field left empty is not stated
// and not checked.
type Expect struct {
	// Serving: whether the case serves a model (a BOM exists); nil when
	// the table does not say.
	Serving *bool
	// Runtimes is the exact set of runtimes as "name@version/confidence";
	// nil when not stated, empty when none is expected.
	Runtimes []string
	// RuntimeAny: some runtime's name contains one of these (lower case).
	RuntimeAny []string
	// Version: some runtime has this version.
	Version string
	// Models: every one is among the BOM's models (case-insensitive);
	// with ModelsExact the two sets are equal (and an empty Models says
	// there is none).
	Models      []string
	ModelsExact bool
	// Revision: every model is pinned to it; "-" means every model is
	// unpinned.
	Revision string
	// Roles must all be present.
	Roles []string
	// NotHF: no model is a Hugging Face package.
	NotHF bool
}

// Case is one row of a table: a file, or one workload of it (Kind and
// Name), and what is expected of it.
type Case struct {
	Corpus string
	File   string // slash-separated, relative to the corpus root
	Kind   string
	Name   string
	Expect Expect
	Note   string
}

// ID names the case in reports and in known.yaml.
func (c Case) ID() string {
	if c.Kind == "" {
		return c.File
	}
	if c.Name == "" {
		return c.File + "#" + c.Kind
	}
	return c.File + "#" + c.Kind + "/" + c.Name
}

// Rendered is one workload of a file, rendered.
type Rendered struct {
	Workload schemas.Workload
	Result   transformer.Result
	Models   []Model
}

// Model is a model component of a BOM, as the checks read it.
type Model struct {
	Name     string
	PURL     string
	Revision string
}

// HF reports whether the model is a Hugging Face package.
func (m Model) HF() bool { return strings.HasPrefix(m.PURL, "pkg:huggingface/") }

// Renderer renders the files of a corpus, one at a time.
type Renderer struct {
	norm *collector.Normalizer
	r    *transformer.Renderer
}

// NewRenderer is a renderer with the built-in profiles and rules, or the
// rules of rulesFile when it is not empty.
func NewRenderer(rulesFile string) (*Renderer, error) {
	n, err := collector.NewNormalizer(collector.Config{Cluster: "dev", DefaultNamespace: "default"})
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: "corpus", RulesFile: rulesFile})
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	return &Renderer{norm: n, r: r}, nil
}

// File renders every workload of one file under root, the links between
// its documents followed. Objects that are not workloads are left out; a
// document that cannot be read is in loadErr, as `render -f` reports it,
// and the others are still rendered.
func (r *Renderer) File(root, rel string) (out []Rendered, loadErr, err error) {
	loaded := files.Load(root, filepath.Join(root, filepath.FromSlash(rel)), r.norm)
	for _, ev := range loaded.Events {
		res, err := r.r.Render(ev)
		if err != nil {
			return nil, loaded.Err, fmt.Errorf("render %s %s: %w", rel, ev.Data.Workload.Key(), err)
		}
		x := Rendered{Workload: res.Workload, Result: res}
		if res.BOM != nil {
			if x.Models, err = modelsOf(res.BOM); err != nil {
				return nil, loaded.Err, fmt.Errorf("read bom of %s %s: %w", rel, ev.Data.Workload.Key(), err)
			}
		}
		out = append(out, x)
	}
	return out, loaded.Err, nil
}

// modelsOf reads the model components of a BOM.
func modelsOf(bom []byte) ([]Model, error) {
	var doc struct {
		Components []struct {
			Type       string `json:"type"`
			Name       string `json:"name"`
			PURL       string `json:"purl"`
			Properties []struct {
				Name, Value string
			} `json:"properties"`
		} `json:"components"`
	}
	if err := json.Unmarshal(bom, &doc); err != nil {
		return nil, err
	}
	var out []Model
	for _, c := range doc.Components {
		if c.Type != "machine-learning-model" {
			continue
		}
		m := Model{Name: c.Name, PURL: c.PURL}
		for _, p := range c.Properties {
			if p.Name == "bomstream:model:revision" && m.Revision == "" {
				m.Revision = p.Value
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// Files lists the YAML files under root, slash-separated and sorted.
func Files(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
