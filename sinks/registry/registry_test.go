package registry

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

func TestBuiltin(t *testing.T) {
	r := Builtin()
	if got := r.Types(); !reflect.DeepEqual(got, []string{"dependencytrack", "file", "gcs", "oci", "stdout"}) {
		t.Fatalf("types %v", got)
	}
	dir := t.TempDir()
	cfg, err := r.Decode("file", map[string]any{"dir": dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.New(context.Background(), "file", "", cfg, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "file" {
		t.Fatalf("default name %q, want the type", s.Name())
	}
	b := sinktest.NewBOM(sinktest.Workload("w"), 1)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dev", "ml", "Deployment", "w", file.LatestFile)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ, name string
		raw       map[string]any
		want      string
	}{
		{"nope", "x", nil, `unknown sink type "nope"`},
		{"file", "bad.name", nil, `sink name "bad.name"`},
		{"file", "archive", map[string]any{"dri": "x"}, `unknown key "dri" (known: dir, flushInterval, fsync)`},
		{"stdout", "out", map[string]any{"writer": "x"}, `unknown key "writer"`},
	} {
		cfg, err := r.Decode(c.typ, c.raw)
		if err == nil {
			_, err = r.New(context.Background(), c.typ, c.name, cfg, sinks.Deps{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%s, %s): got %v, want an error containing %s", c.typ, c.name, err, c.want)
		}
	}
}

// The cloud types are spelled once, as the sink packages spell them, and a
// registry without them says why a configuration naming one finds none.
func TestCloudTypesAndHint(t *testing.T) {
	full, local := Builtin(), Local()
	for _, typ := range CloudTypes() {
		if _, ok := full[typ]; !ok {
			t.Errorf("cloud type %q is not a type of the default build", typ)
		}
		if _, ok := local[typ]; ok {
			t.Errorf("cloud type %q is local", typ)
		}
		if OmittedHint(local, typ) == "" || OmittedHint(full, typ) != "" {
			t.Errorf("hint for %q: without it %q, with it %q", typ, OmittedHint(local, typ), OmittedHint(full, typ))
		}
	}
	if len(full) != len(local)+len(CloudTypes()) || OmittedHint(local, "ftp") != "" {
		t.Errorf("default build types %v, local %v, cloud %v", full.Types(), local.Types(), CloudTypes())
	}
}
