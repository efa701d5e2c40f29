package dtrack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

func TestDecodeConfig(t *testing.T) {
	reg := sinks.Registry{dtrack.Type: dtrack.SinkType}
	cfg, err := reg.Decode(dtrack.Type, map[string]any{
		"url": "https://dtrack-api.example.com", "apiKeyEnv": "DT_KEY", "projectVersion": "{{.UID}}",
		"hierarchy": false, "onTombstone": "delete", "processingTimeout": "90s", "pollInterval": "500ms",
		"tags": []any{"team:ml"}, "compressAbove": 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*dtrack.Config)
	if c.ProcessingTimeout != 90*time.Second || c.PollInterval != 500*time.Millisecond || *c.Hierarchy || c.OnTombstone != "delete" || c.CompressAbove != 1<<20 {
		t.Fatalf("decoded %+v", c)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	ok := dtrack.Config{URL: "https://dtrack.example.com", APIKeyEnv: "K"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for want, edit := range map[string]func(*dtrack.Config){
		"url: required":                          func(c *dtrack.Config) { c.URL = "" },
		"url: \"ftp://x\" is not an http":        func(c *dtrack.Config) { c.URL = "ftp://x" },
		"url: path \"/dtrack\"":                  func(c *dtrack.Config) { c.URL = "https://x/dtrack" },
		"url: must not carry credentials":        func(c *dtrack.Config) { c.URL = "https://u:p@x" },
		"apiKeyFile or apiKeyEnv: set one":       func(c *dtrack.Config) { c.APIKeyEnv = "" },
		"apiKeyFile and apiKeyEnv: set one, not": func(c *dtrack.Config) { c.APIKeyFile = "/k" },
		"projectName: template":                  func(c *dtrack.Config) { c.ProjectName = "{{.Nme}}" },
		"projectVersion: ":                       func(c *dtrack.Config) { c.ProjectVersion = "{{if false}}x{{end}}" },
		"namespaceProject: ":                     func(c *dtrack.Config) { c.NamespaceProject = "{{" },
		"parentVersion: must not be blank":       func(c *dtrack.Config) { c.ParentVersion = " " },
		"tags[1]: \"a,b\"":                       func(c *dtrack.Config) { c.Tags = []string{"ok", "a,b"} },
		"onTombstone: \"archive\"":               func(c *dtrack.Config) { c.OnTombstone = "archive" },
		"processingTimeout: negative":            func(c *dtrack.Config) { c.ProcessingTimeout = -time.Second },
		"compressAbove: -2: want a size":         func(c *dtrack.Config) { c.CompressAbove = -2 },
	} {
		c := ok
		edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
}

func TestNewReadsTheKeyFromFileOrEnv(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	key := dt.NewKey(allPerms...)
	env := func(name string) string {
		if name == "DT_KEY" {
			return key
		}
		return ""
	}
	s, err := dtrack.New(dtrack.Config{URL: dt.URL(), APIKeyEnv: "DT_KEY"}, sinks.Deps{Name: "dt", Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 1, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	if s.Name() != "dt" {
		t.Fatalf("name %q", s.Name())
	}
	if _, err := dtrack.New(dtrack.Config{URL: dt.URL(), APIKeyEnv: "UNSET"}, sinks.Deps{Getenv: env}); err == nil || !strings.Contains(err.Error(), "UNSET is not set") {
		t.Fatalf("unset variable: %v", err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(""), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dtrack.New(dtrack.Config{URL: dt.URL(), APIKeyFile: file}, sinks.Deps{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty key file: %v", err)
	}
	if err := os.WriteFile(file, []byte("odt_a\nb"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dtrack.New(dtrack.Config{URL: dt.URL(), APIKeyFile: file}, sinks.Deps{}); err == nil || strings.Contains(err.Error(), "odt_a") {
		t.Fatalf("key with a line break: %v", err)
	}
	// New does not need the server.
	dt.Down(0)
	if _, err := dtrack.New(dtrack.Config{URL: dt.URL(), APIKeyEnv: "DT_KEY"}, sinks.Deps{Getenv: env}); err != nil {
		t.Fatalf("New with the server down: %v", err)
	}
}

func TestMetricsRegisterTwice(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	reg := prometheus.NewRegistry()
	key := dt.NewKey(allPerms...)
	getenv := func(string) string { return key }
	var ss []*dtrack.Sink
	for _, name := range []string{"a", "b"} {
		s, err := dtrack.New(dtrack.Config{URL: dt.URL(), APIKeyEnv: "K"}, sinks.Deps{Name: name, Metrics: reg, Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	if err := ss[1].Export(ctx, aiBOM(t, workload("ml", "chat"), 1, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), "bomstream_dtrack_uploads_total") {
		t.Fatalf("metrics: %v", names)
	}
}
