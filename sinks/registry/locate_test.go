package registry

import (
	"context"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// What registry.New returns is a Locator for the sinks that keep BOMs in
// a store, whatever CycloneDX version they write, and DryRun keeps it one.
func TestNewKeepsLocator(t *testing.T) {
	raw := map[string]map[string]any{
		"file":            {"dir": t.TempDir()},
		"stdout":          nil,
		"gcs":             {"bucket": "boms", "anonymous": true},
		"dependencytrack": {"url": "https://dt.example.com", "apiKeyEnv": "DT_KEY"},
		"oci":             nil,
	}
	locating := map[string]bool{"file": true, "gcs": true, "dependencytrack": true, "oci": true}
	r := Builtin()
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	for _, typ := range r.Types() {
		for _, spec := range []string{sinks.Spec16, sinks.Spec17} {
			cfg, err := r.Decode(typ, raw[typ])
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			s, err := r.New(context.Background(), typ, "", cfg, sinks.Deps{SpecVersion: spec, Getenv: func(string) string { return "key" }})
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			for _, s := range []sinks.Sink{s, sinks.DryRun(s, nil)} {
				l, ok := s.(sinks.Locator)
				if ok != locating[typ] {
					t.Errorf("%s (%s), specVersion %s: Locator %v, want %v", typ, s.Name(), spec, ok, locating[typ])
					continue
				}
				if ok && typ != "oci" && len(l.Locate(sinktest.Version(b, true))) == 0 {
					t.Errorf("%s (%s), specVersion %s: the current version is nowhere", typ, s.Name(), spec)
				}
			}
		}
	}
}
