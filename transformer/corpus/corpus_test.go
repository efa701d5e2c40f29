package corpus

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
)

var (
	report = flag.Bool("corpus.report", false, "print the corpus report (make corpus)")
	extra  = flag.String("corpus.extra", "", "a folder with an index.json like the real-world corpus's: reported too, never failing")
)

// realworldRoot finds ../shared/fixtures/realworld like the upstream
// corpus: $BOMSTREAM_REALWORLD, else above the working directory; missing,
// it skips, except under CI=true, where it fails.
func realworldRoot(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("BOMSTREAM_REALWORLD"); d != "" {
		return d
	}
	if up, ok := manifesttest.Find(); ok {
		d := filepath.Join(filepath.Dir(up), "realworld")
		if _, err := os.Stat(filepath.Join(d, "index.json")); err == nil {
			return d
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("realworld corpus not found: set BOMSTREAM_REALWORLD (CI=true, so this fails instead of skipping)")
	}
	t.Skip("realworld corpus not found; set BOMSTREAM_REALWORLD to run this test")
	return ""
}

// TestCorpus renders the three corpora and holds each case to its table:
// an unexpected miss, or a known one that no longer misses, fails. With
// -corpus.report it prints the figures (make corpus).
func TestCorpus(t *testing.T) {
	known, err := LoadKnown()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer("")
	if err != nil {
		t.Fatal(err)
	}
	type corpus struct {
		name, root string
		cases      func() ([]Case, error)
	}
	rw := realworldRoot(t)
	up := manifesttest.Corpus(t)
	corpora := []corpus{
		{Realworld, rw, func() ([]Case, error) { return LoadRealworld(rw) }},
		{Upstream, up, func() ([]Case, error) {
			rows, err := LoadRows(filepath.Join("..", "testdata", "upstream.yaml"))
			return Cases(Upstream, rows), err
		}},
		{Own, filepath.Join("..", "testdata", "manifests"), func() ([]Case, error) {
			rows, err := LoadRows(filepath.Join("..", "testdata", "expected", "*.yaml"))
			return Cases(Own, rows), err
		}},
	}
	var figs []Figures
	judged := map[string][]Judged{}
	for _, c := range corpora {
		cases, err := c.cases()
		if err != nil {
			t.Fatal(err)
		}
		js, err := Evaluate(r, c.root, cases, known)
		if err != nil {
			t.Fatal(err)
		}
		judged[c.name] = js
		f := Tally(c.name, js)
		figs = append(figs, f)
		if f.Failed() {
			t.Errorf("%s corpus: %d unexpected misses, %d stale known entries (see the report below)", c.name, f.Unexpected, f.Stale)
		}
	}
	if *extra != "" {
		cases, err := LoadRealworld(*extra)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cases {
			cases[i].Corpus = "extra"
		}
		js, err := Evaluate(r, *extra, cases, nil)
		if err != nil {
			t.Fatal(err)
		}
		judged["extra"] = js
		figs = append(figs, Tally("extra", js))
	}
	var b strings.Builder
	Report(&b, figs, judged)
	switch {
	case *report:
		fmt.Print(b.String())
	case t.Failed():
		t.Log("\n" + b.String())
	}
	// The bar of the real-world corpus: 95% of its cases right on every
	// field they state, known misses counted wrong.
	if f := figs[0]; f.Right*100 < f.Cases*95 {
		t.Errorf("realworld corpus: %d of %d cases right, under 95%%", f.Right, f.Cases)
	}
	if f := figs[1]; f.Right != f.Cases || f.Cases < 45 {
		t.Errorf("upstream corpus: %d of %d cases right; every one of the 45 INDEX rows must be", f.Right, f.Cases)
	}
}
