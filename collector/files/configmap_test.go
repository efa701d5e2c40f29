package files

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
)

// realWorld is the real-world corpus beside the upstream one
// (../shared/fixtures/realworld), read in place.
func realWorld(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(manifesttest.Corpus(t)), "realworld")
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("real-world corpus: %v", err)
		}
		t.Skipf("real-world corpus: %v", err)
	}
	return dir
}

// keptValues are the values the Inputs keep where a model can be read: env
// values (literal, or given by a ConfigMap), the words of configuration
// files, scripts, args and commands, and fields.
func keptValues(in *schemas.Inputs) []string {
	var out []string
	for _, f := range in.Fields {
		out = append(out, f.Value)
	}
	for _, c := range in.Components {
		for _, f := range c.Fields {
			out = append(out, f.Value)
		}
		for _, ct := range c.Containers {
			for _, e := range ct.Env {
				out = append(out, e.Value)
			}
			for _, s := range ct.EnvFrom {
				for _, e := range s.Env {
					out = append(out, e.Value)
				}
			}
			for _, f := range ct.Files {
				out = append(out, strings.Fields(strings.NewReplacer("=", " ").Replace(f.Text))...)
			}
			out = append(append(out, ct.Command...), ct.Args...)
		}
	}
	return out
}

// In the real-world files whose models a serving container takes only
// from a ConfigMap of the same file (OPEA's TGI and TEI manifests: envFrom
// a ConfigMap holding MODEL_ID), the manifest source puts that model in the
// container's inputs, from the ConfigMap, where the document read alone
// has none; and the token placeholder those ConfigMaps hold is not kept.
func TestRealWorldModelsFromConfigMaps(t *testing.T) {
	dir := realWorld(t)
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		File   string
		Notes  string
		Expect struct{ Models []string }
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	n, err := collector.NewNormalizer(collector.Config{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range rows {
		if !strings.Contains(r.Notes, "only in ConfigMap") {
			continue
		}
		path := filepath.Join(dir, r.File)
		loaded := Load(dir, path, n)
		if loaded.Err != nil {
			t.Errorf("%s: %v", r.File, loaded.Err)
			continue
		}
		objs, err := manifest.ReadPath(path)
		if err != nil {
			t.Fatal(err)
		}
		var got, alone []string
		for _, o := range objs {
			if in, err := n.Normalize(o.Obj, "x"); err == nil {
				alone = append(alone, keptValues(in)...)
			}
		}
		for _, ev := range loaded.Events {
			got = append(got, keptValues(ev.Data.Inputs)...)
			if s, _ := json.Marshal(ev); strings.Contains(string(s), "insert-your-huggingface-token-here") {
				t.Errorf("%s: the token placeholder of the ConfigMap reached %s", r.File, ev.Subject)
			}
		}
		for _, m := range r.Expect.Models {
			switch {
			case slices.Contains(alone, m):
				t.Errorf("%s: %s is in the workload itself, not only in its ConfigMap", r.File, m)
			case !slices.Contains(got, m):
				t.Errorf("%s: model %s, in a ConfigMap the workload reads, is not in its inputs", r.File, m)
			default:
				checked++
			}
		}
	}
	if checked < 4 {
		t.Errorf("only %d models checked; the index names more", checked)
	}
}
