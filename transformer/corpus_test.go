package transformer

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
	sigsyaml "sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// rendered is one workload of a manifest file, rendered.
type rendered struct {
	rel    string // file path relative to its root, slash-separated
	inputs *schemas.Inputs
	res    Result
}

// renderTree normalizes every workload of every YAML file under root with the
// collector's manifest source (so that links between the documents of a
// file are followed, as the pipeline follows them) and renders it. Objects
// that are not workloads are left out.
func renderTree(t *testing.T, root string) []rendered {
	t.Helper()
	n, err := collector.NewNormalizer(collector.Config{Cluster: "dev", DefaultNamespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	r := newRenderer(t)
	var paths []string
	err = filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	var out []rendered
	for _, f := range paths {
		rel, _ := filepath.Rel(root, f)
		rel = filepath.ToSlash(rel)
		loaded := files.Load(root, f, n)
		if loaded.Err != nil {
			t.Errorf("load %s: %v", rel, loaded.Err)
		}
		for _, ev := range loaded.Events {
			in := ev.Data.Inputs
			res, err := r.Render(event(t, in))
			if err != nil {
				t.Errorf("render %s %s/%s: %v", rel, in.Workload.Kind, in.Workload.Name, err)
				continue
			}
			out = append(out, rendered{rel: rel, inputs: in, res: res})
		}
	}
	return out
}

// validateBOMs validates every BOM against the CycloneDX schema.
func validateBOMs(t *testing.T, rs []rendered) {
	t.Helper()
	v := bomValidator(t)
	for _, x := range rs {
		if x.res.BOM == nil {
			continue
		}
		if err := v.ValidateBOM(x.res.BOM); err != nil {
			w := x.inputs.Workload
			t.Errorf("%s %s/%s: %v", x.rel, w.Kind, w.Name, err)
		}
	}
}

// checkGoldens validates every BOM and compares it, indented, with
// testdata/golden/<prefix><rel>--<kind>-<name>.cdx.json (-update rewrites).
// Goldens come from the project's own manifests only, so that a plain
// clone regenerates every one of them.
func checkGoldens(t *testing.T, prefix string, rs []rendered) {
	t.Helper()
	validateBOMs(t, rs)
	for _, x := range rs {
		if x.res.BOM == nil {
			continue
		}
		w := x.inputs.Workload
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, x.res.BOM, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		golden := filepath.Join("testdata", "golden", filepath.FromSlash(prefix+x.rel)+"--"+w.Kind+"-"+w.Name+".cdx.json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s (run with -update to create): %v", golden, err)
			continue
		}
		if !bytes.Equal(want, pretty.Bytes()) {
			t.Errorf("%s differs from the rendered BOM (run with -update after review)", golden)
		}
	}
}

// indexRow is what INDEX.md says about one manifest, checked against the BOM.
type indexRow struct {
	row      int
	file     string // relative to the corpus root
	kind     string
	runtimes []RuntimeSummary // exact set; nil means none
	models   []string         // exact set
	revision string           // pinned revision of the first model
	roles    []string         // must all be present
	skipped  bool             // no BOM at all
	note     string           // where bomstream and INDEX.md disagree, and why
}

func TestCorpusUpstream(t *testing.T) {
	root := manifesttest.Corpus(t)
	out := renderTree(t, root)
	// The upstream corpus is read in place and not committed: its BOMs are
	// held to INDEX.md, as testdata/upstream.yaml reads it, and to the
	// schema, not to goldens a clone without it could not regenerate.
	validateBOMs(t, out)

	byFile := map[string][]rendered{}
	for _, x := range out {
		byFile[x.rel+"#"+x.inputs.Workload.Kind] = append(byFile[x.rel+"#"+x.inputs.Workload.Kind], x)
	}
	rows := map[int]bool{}
	for _, e := range loadTable(t, filepath.Join("testdata", "upstream.yaml")) {
		row := e.row(t)
		row.file = e.File
		rows[row.row] = true
		xs := byFile[e.File+"#"+row.kind]
		if row.skipped {
			for _, x := range xs {
				if x.res.BOM != nil {
					t.Errorf("row %d: a BOM for %s", row.row, x.inputs.Workload.Name)
				}
			}
			continue
		}
		if len(xs) != 1 {
			t.Errorf("row %d: %d workloads of kind %s in %s", row.row, len(xs), row.kind, row.file)
			continue
		}
		checkRow(t, row, xs[0].res)
	}
	if len(rows) != 45 {
		t.Errorf("the table covers %d of the 45 INDEX rows", len(rows))
	}
}

func checkRow(t *testing.T, row indexRow, res Result) {
	t.Helper()
	if res.BOM == nil {
		t.Errorf("row %d (%s): skipped: %s", row.row, row.file, res.Skipped)
		return
	}
	if !reflect.DeepEqual(res.Summary.Runtimes, row.runtimes) {
		t.Errorf("row %d (%s): runtimes %+v, want %+v", row.row, row.file, res.Summary.Runtimes, row.runtimes)
	}
	got := slices.Clone(res.Summary.Models)
	want := slices.Clone(row.models)
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("row %d (%s): models %q, want %q", row.row, row.file, got, want)
	}
	for _, role := range row.roles {
		if !slices.Contains(res.Summary.Roles, role) {
			t.Errorf("row %d (%s): roles %v lack %s", row.row, row.file, res.Summary.Roles, role)
		}
	}
	for _, r := range res.Summary.Runtimes {
		if r.Name == "vllm" && regexp.MustCompile(`llm-d-inference-sim`).Match(res.BOM) {
			t.Errorf("row %d: a simulator reported as vllm", row.row)
		}
	}
	var doc bomDoc
	if err := json.Unmarshal(res.BOM, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.byType("machine-learning-model") {
		revs := m.props("model:revision")
		if row.revision != "" {
			if !slices.Contains(revs, row.revision) || !strings.HasSuffix(m.PURL, "@"+row.revision) {
				t.Errorf("row %d: model %s revisions %v purl %s, want %s", row.row, m.Name, revs, m.PURL, row.revision)
			}
		} else if len(revs) != 0 || m.prop("model:unpinned") != "true" {
			t.Errorf("row %d: model %s should be unpinned: %v", row.row, m.Name, m.Properties)
		}
	}
}

// expected is one row of testdata/expected/*.yaml: what bomstream must find
// in one object of testdata/manifests.
type expected struct {
	Row      int      `json:"row"` // the INDEX.md row of an upstream manifest
	File     string   `json:"file"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Runtimes []string `json:"runtimes"` // name@version/confidence, exact set
	Models   []string `json:"models"`   // exact set
	Revision string   `json:"revision"` // pinned revision of every model
	Roles    []string `json:"roles"`    // must all be present
	Skipped  bool     `json:"skipped"`  // no BOM
	Note     string   `json:"note"`
}

// loadExpected reads every table of testdata/expected, keyed by
// file#kind#name.
func loadExpected(t *testing.T) map[string]expected {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "expected", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no expectation tables: %v", err)
	}
	out := map[string]expected{}
	for _, f := range files {
		for _, r := range loadTable(t, f) {
			k := r.File + "#" + r.Kind + "#" + r.Name
			if _, dup := out[k]; dup {
				t.Errorf("%s: %s listed twice", f, k)
			}
			out[k] = r
		}
	}
	return out
}

// loadTable reads one table of expectations, strictly.
func loadTable(t *testing.T, f string) []expected {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var rows []expected
	if err := sigsyaml.UnmarshalStrict(b, &rows); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return rows
}

// row turns an expectation into the indexRow checkRow reads.
func (e expected) row(t *testing.T) indexRow {
	t.Helper()
	r := indexRow{row: e.Row, file: e.File + " " + e.Kind + "/" + e.Name, kind: e.Kind, models: e.Models, revision: e.Revision, roles: e.Roles, skipped: e.Skipped}
	for _, s := range e.Runtimes {
		nv, conf, ok1 := strings.Cut(s, "/")
		name, version, ok2 := strings.Cut(nv, "@")
		if !ok1 || !ok2 {
			t.Fatalf("%s %s: runtime %q is not name@version/confidence", e.File, e.Name, s)
		}
		r.runtimes = append(r.runtimes, RuntimeSummary{Name: name, Version: version, Confidence: conf})
	}
	if len(r.models) == 0 {
		r.models = nil
	}
	return r
}

// TestCorpusOwn renders the project's own corpus (testdata/manifests,
// written in the shapes upstream docs show) and holds every object to its
// row in testdata/expected: a workload with no row, or a row whose
// workload was not rendered, fails.
func TestCorpusOwn(t *testing.T) {
	out := renderTree(t, filepath.Join("testdata", "manifests"))
	checkGoldens(t, "manifests/", out)
	want := loadExpected(t)
	seen := map[string]bool{}
	for _, x := range out {
		w := x.inputs.Workload
		k := x.rel + "#" + w.Kind + "#" + w.Name
		e, ok := want[k]
		if !ok {
			t.Errorf("no expectation for %s (add it to testdata/expected/%s)", k, x.rel)
			continue
		}
		seen[k] = true
		row := e.row(t)
		if row.skipped {
			if x.res.BOM != nil {
				t.Errorf("%s: rendered a BOM (%s)", k, x.res.Summary.Runtimes)
			}
			continue
		}
		checkRow(t, row, x.res)
	}
	for k, e := range want {
		if !seen[k] && !e.Skipped {
			t.Errorf("%s: expected a BOM, not rendered", k)
		}
	}
	if len(want) < 70 {
		t.Errorf("the own corpus has %d rows", len(want))
	}
	// Settings and flags that only these manifests exercise.
	for _, x := range out {
		if x.res.BOM == nil {
			continue
		}
		var doc bomDoc
		json.Unmarshal(x.res.BOM, &doc)
		switch x.inputs.Workload.Name {
		case "vllm-serve":
			c, _ := doc.runtime("vllm")
			for k, v := range map[string]string{"tensorParallelSize": "4", "pipelineParallelSize": "2", "quantization": "awq", "maxModelLen": "16384", "servedModelName": "model-a", "loraAdapters": "adapter-1=/adapters/one"} {
				if c.prop("runtime:"+k) != v {
					t.Errorf("vllm-serve %s = %q, want %q", k, c.prop("runtime:"+k), v)
				}
			}
			if bytes.Contains(x.res.BOM, []byte("sk-should-never-appear")) {
				t.Error("an api key reached the BOM")
			}
		case "dgd-sglang":
			c, _ := doc.runtime("sglang")
			if got := c.props("runtime:tensorParallelSize"); !reflect.DeepEqual(got, []string{"2", "4"}) {
				t.Errorf("dgd-sglang tp %v", got)
			}
		case "vllmruntime":
			c, _ := doc.runtime("vllm")
			if c.prop("runtime:tensorParallelSize") != "2" {
				t.Errorf("vllmruntime tp %v", c.Properties)
			}
		case "simulator":
			if doc.Metadata.Component.prop("simulator") != "llm-d-inference-sim" {
				t.Error("simulator not flagged")
			}
		case "patch":
			if doc.Metadata.Component.prop("image:unknown") == "" {
				t.Error("image-less container not noted")
			}
		}
	}
}
