package dtrack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

var _ sinks.Locator = (*dtrack.Sink)(nil)

// Locate names the project Export uploaded the current version to, with
// the default and with custom templates; an older version, and a
// tombstone, are nowhere.
func TestLocate(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	for _, c := range []struct {
		name          string
		edit          func(*dtrack.Config)
		project, vers string
	}{
		{"default", nil, "dev/ml/Deployment/chat", "current"},
		{"templates", func(c *dtrack.Config) {
			c.ProjectName, c.ProjectVersion = "ai {{.Namespace}}-{{.Name}}", "{{.Cluster}}-{{.UID}}"
		}, "ai ml-chat", "dev-uid-ml-chat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSink(t, dt, allPerms, c.edit)
			w := workload("ml", "chat")
			b := aiBOM(t, w, 1, runtimePart("vllm", "0.6.0"))
			if err := s.Export(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			locs := s.Locate(sinktest.Version(b, true))
			want := fmt.Sprintf("project %s version %s at %s", c.project, c.vers, dt.URL())
			if len(locs) != 1 || locs[0].Where != want || locs[0].What != "project" || locs[0].Type != dtrack.LocationType ||
				locs[0].Sink != "dtrack" || locs[0].URL != "" {
				t.Fatalf("locations %+v, want %s", locs, want)
			}
			// The project the location names holds the BOM.
			name, rest, _ := strings.Cut(strings.TrimPrefix(locs[0].Where, "project "), " version ")
			version, _, _ := strings.Cut(rest, " at ")
			if p, ok := dt.Project(name, version); !ok || p.BomHash != b.BomHash {
				t.Fatalf("project %q version %q: found %v, holding %s; have %v", name, version, ok, p.BomHash, projectNames(dt))
			}
			if locs := s.Locate(sinktest.Version(b, false)); locs != nil {
				t.Errorf("an older version: %+v, want none (a project holds the latest only)", locs)
			}
			if locs := s.Locate(sinks.Version{Workload: w, ChangeSeq: 2, Latest: true}); locs != nil {
				t.Errorf("a tombstone: %+v, want none", locs)
			}
		})
	}
}

// The API key, from a file or the environment, never reaches a location.
func TestLocateCarriesNoKey(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	key := dt.NewKey(allPerms...)
	fromEnv, err := dtrack.New(dtrack.Config{URL: dt.URL() + "/", APIKeyEnv: "DT_KEY"},
		sinks.Deps{Name: "dtrack-env", Getenv: func(string) string { return key }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fromEnv.Close() })
	b := aiBOM(t, workload("ml", "chat"), 1)
	for _, c := range []struct {
		s   *dtrack.Sink
		key string
	}{{s.Sink, s.key}, {fromEnv, key}} {
		locs := c.s.Locate(sinktest.Version(b, true))
		if len(locs) != 1 || !strings.HasSuffix(locs[0].Where, " at "+dt.URL()) {
			t.Fatalf("locations %+v, want one at %s", locs, dt.URL())
		}
		if text := fmt.Sprintf("%+v", locs); strings.Contains(text, c.key) {
			t.Errorf("a location carries the API key: %s", text)
		}
	}
}
