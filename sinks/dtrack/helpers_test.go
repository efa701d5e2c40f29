package dtrack_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// lineEnv names the release line the suite runs against (see
// TestSuiteOnEveryLine); unset, the double's default.
const lineEnv = "BOMSTREAM_DTRACK_LINE"

// newDouble starts a Dependency-Track double (its schema validator is
// compiled once per test process, by validate.CycloneDX) of the suite's
// line, unless opts names a version.
func newDouble(t testing.TB, opts dtracktest.Options) *dtracktest.Server {
	t.Helper()
	if opts.Version == "" {
		opts.Version = os.Getenv(lineEnv)
	}
	return dtracktest.New(t, opts)
}

// line is the version the suite's doubles report.
func line() string {
	if v := os.Getenv(lineEnv); v != "" {
		return v
	}
	return dtracktest.DefaultVersion
}

// allPerms is what a fully working key holds.
var allPerms = []string{dtracktest.BOMUpload, dtracktest.ProjectCreationUpload, dtracktest.PortfolioManagement, dtracktest.ViewPortfolio}

// testSink is a sink with its double, key and logs.
type testSink struct {
	*dtrack.Sink
	dt   *dtracktest.Server
	key  string
	logs *observer.ObservedLogs
}

// newSink builds a sink on dt whose key (in a file) holds perms; edit
// changes the configuration first.
func newSink(t testing.TB, dt *dtracktest.Server, perms []string, edit func(*dtrack.Config)) testSink {
	t.Helper()
	key := dt.NewKey(perms...)
	file := filepath.Join(t.TempDir(), "dtrack-key")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := dtrack.Config{URL: dt.URL(), APIKeyFile: file, ProcessingTimeout: 20 * time.Second, PollInterval: 50 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	s, err := dtrack.New(cfg, sinks.Deps{Name: "dtrack", Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return testSink{Sink: s, dt: dt, key: key, logs: logs}
}

// assertNoKey fails when the key appears in any log entry or in errs.
func (s testSink) assertNoKey(t testing.TB, errs ...error) {
	t.Helper()
	for _, e := range s.logs.All() {
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "%s %v", e.Message, e.ContextMap())
		if bytes.Contains(buf.Bytes(), []byte(s.key)) {
			t.Errorf("log entry carries the API key: %s", buf.String())
		}
	}
	for _, err := range errs {
		if err != nil && bytes.Contains([]byte(err.Error()), []byte(s.key)) {
			t.Errorf("error carries the API key: %v", err)
		}
	}
}

// workload is a Deployment in cluster dev.
func workload(ns, name string) schemas.Workload {
	return schemas.Workload{Cluster: "dev", Namespace: ns, APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: "uid-" + ns + "-" + name}
}

// projectName is the default project name of w.
func projectName(w schemas.Workload) string {
	return w.Cluster + "/" + w.Namespace + "/" + w.Kind + "/" + w.Name
}

// part is one component of a test AI-BOM.
type part struct {
	Type, Name, Version, Purl string
	Runtime                   string // bomstream:runtime:name
	Note                      string // a bomstream:note property, to make big BOMs
}

func runtimePart(name, version string) part {
	return part{Type: "application", Name: name, Version: version, Purl: "pkg:pypi/" + name + "@" + version, Runtime: name}
}

func model(id, rev string) part {
	return part{Type: "machine-learning-model", Name: id, Purl: "pkg:huggingface/" + id + "@" + rev}
}

func image(repo, tag string) part {
	return part{Type: "container", Name: repo, Version: tag, Purl: "pkg:oci/" + filepath.Base(repo) + "?repository_url=" + repo + "&tag=" + tag}
}

// aiBOM is a bomstream-shaped CycloneDX 1.6 BOM of w, rendered from change
// changeSeq.
func aiBOM(t testing.TB, w schemas.Workload, changeSeq uint64, parts ...part) sinks.BOM {
	t.Helper()
	comps := []map[string]any{}
	for _, p := range parts {
		c := map[string]any{"type": p.Type, "name": p.Name, "bom-ref": p.Type + ":" + p.Name, "purl": p.Purl}
		if p.Version != "" {
			c["version"] = p.Version
		}
		var props []map[string]string
		if p.Runtime != "" {
			props = append(props, map[string]string{"name": "bomstream:runtime:name", "value": p.Runtime})
		}
		if p.Note != "" {
			props = append(props, map[string]string{"name": "bomstream:note", "value": p.Note})
		}
		if props != nil {
			c["properties"] = props
		}
		comps = append(comps, c)
	}
	body, err := schemas.CanonicalJSON(map[string]any{
		"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
		"metadata": map[string]any{"component": map[string]any{
			"bom-ref": "workload", "type": "application", "group": w.Namespace, "name": w.Name,
			"properties": []map[string]string{
				{"name": "bomstream:cluster", "value": w.Cluster}, {"name": "bomstream:kind", "value": w.Kind},
				{"name": "bomstream:changeSeq", "value": fmt.Sprint(changeSeq)},
			},
		}},
		"components": comps,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sinks.BOM{
		Workload: w, BomHash: schemas.BomHash(body), InputHash: schemas.BomHash([]byte(fmt.Sprint(changeSeq))),
		ChangeSeq: changeSeq, StreamSeq: changeSeq, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Body: body,
	}
}

func tombstone(w schemas.Workload, changeSeq uint64) sinks.Tombstone {
	return sinks.Tombstone{Workload: w, Reason: sinks.ReasonDeleted, ChangeSeq: changeSeq, StreamSeq: changeSeq}
}

// mustProject returns the double's project called name, version "current".
func mustProject(t testing.TB, dt *dtracktest.Server, name string) dtracktest.Project {
	t.Helper()
	p, ok := dt.Project(name, "current")
	if !ok {
		t.Fatalf("project %q does not exist (have %v)", name, projectNames(dt))
	}
	return p
}

func projectNames(dt *dtracktest.Server) []string {
	var out []string
	for _, p := range dt.Projects() {
		out = append(out, p.Name+"@"+p.Version)
	}
	return out
}
