package main

// Dependency-Track on both lines through the whole pipeline: CycloneDX 1.7
// by choice, `sink check` on each line, and kill -9 during an export that
// must upload no BOM twice.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas/validate"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// dtSink is a dependencytrack sink entry for dt with a key allowed
// everything (in a file under dir), in specVersion spec ("" for none).
func dtSink(t *testing.T, dt *dtracktest.Server, dir, name, spec string) string {
	t.Helper()
	keyFile := filepath.Join(dir, name+"-key")
	writeFile(t, keyFile, dt.NewKey(dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement, dtracktest.ProjectCreationUpload)+"\n")
	cfg, _ := json.Marshal(map[string]any{"url": dt.URL(), "apiKeyFile": keyFile, "pollInterval": "20ms"})
	entry := fmt.Sprintf("- {name: %s, type: dependencytrack, config: %s, runner: {baseBackoff: 50ms, maxBackoff: 200ms, maxAttempts: 3}", name, cfg)
	if spec != "" {
		entry += ", specVersion: " + fmt.Sprintf("%q", spec)
	}
	return entry + "}\n"
}

// specVersion 1.7: the file sink's documents and the uploads to 4.14.4 and
// 5.1 pass the official CycloneDX 1.7 schema; 4.13 and 5.0 take no 1.7, and
// the sink says so in `sink check` and in the dead letter of every BOM.
func TestSpecVersion17EndToEnd(t *testing.T) {
	sharedDir, ok := validate.SharedSchemaDir("cyclonedx-1.7", "bom-1.7.schema.json")
	if !ok {
		t.Fatal("../shared/schemas/cyclonedx-1.7 is missing: the official 1.7 schema is needed")
	}
	v17, err := validate.New17(sharedDir)
	if err != nil || !v17.Official() {
		t.Fatalf("official 1.7 schema: %v", err)
	}
	dir := t.TempDir()
	doubles := map[string]*dtracktest.Server{}
	conf := fmt.Sprintf("sinks:\n- {name: files, type: file, specVersion: \"1.7\", config: {dir: %q}}\n", filepath.Join(dir, "boms"))
	for _, line := range []string{dtracktest.Line413, dtracktest.Line414, dtracktest.Line50, dtracktest.Line51} {
		name := "dt" + strings.NewReplacer(".", "", "-SNAPSHOT", "").Replace(line)
		doubles[name] = dtracktest.New(t, dtracktest.Options{Version: line, Validator17: v17})
		conf += dtSink(t, doubles[name], dir, name, "1.7")
	}
	writeFile(t, filepath.Join(dir, "bomstream.yaml"), conf)
	tree := t.TempDir()
	copyManifests(t, "../../examples", tree)
	want := serving(expect(t, tree, "default"))
	c := newCLI(t)
	for name, dt := range doubles {
		r := c.run("sink", "check", name, "--config", filepath.Join(dir, "bomstream.yaml"))
		takes := name == "dt4144" || name == "dt510"
		if takes != (r.err == nil) || !strings.Contains(r.stdout, "CycloneDX 1.7") {
			t.Errorf("sink check %s (takes 1.7: %v): %v\n%s", name, takes, r.err, r.stdout)
		}
		if !takes && !strings.Contains(r.stdout, "does not accept CycloneDX 1.7 (4.14.4 and 5.1 are the first that do)") {
			t.Errorf("sink check %s does not say why:\n%s", name, r.stdout)
		}
		_ = dt
	}
	r := c.run("run", "--once", "--config", filepath.Join(dir, "bomstream.yaml"), "--manifests", tree, "--data-dir", filepath.Join(dir, "data"))
	if r.err == nil {
		t.Fatalf("run --once with sinks that refuse every BOM succeeded:\n%s", tail(r.stdout, 2000))
	}
	var docs int
	err = filepath.WalkDir(filepath.Join(dir, "boms"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".cdx.json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := v17.ValidateBOM(b); err != nil || !strings.Contains(string(b), `"specVersion":"1.7"`) {
			t.Errorf("%s: not a valid 1.7 document: %v", p, err)
		}
		docs++
		return nil
	})
	if err != nil || docs < len(want) {
		t.Fatalf("%d documents in the file sink, want %d (%v)", docs, len(want), err)
	}
	for name, dt := range doubles {
		takes := name == "dt4144" || name == "dt510"
		imported := 0
		for _, p := range dt.Projects() {
			if p.LastBomImportFormat == "CycloneDX 1.7" {
				imported++
			}
		}
		if takes && imported != len(want) {
			t.Errorf("%s imported %d 1.7 BOMs, want %d", name, imported, len(want))
		}
		if !takes && (imported != 0 || dt.Calls("PUT /api/v1/bom") != 0) {
			t.Errorf("%s: %d imports, %d uploads of a version it refuses", name, imported, dt.Calls("PUT /api/v1/bom"))
		}
	}
	dl := c.run("dlq", "list", "--config", filepath.Join(dir, "bomstream.yaml"), "--data-dir", filepath.Join(dir, "data"))
	for _, name := range []string{"dt4136", "dt504"} {
		if n := strings.Count(dl.stdout, "does not accept CycloneDX 1.7"); n < 2*len(want) || !strings.Contains(dl.stdout, name) {
			t.Fatalf("dead letters do not name the refused version for %s (%d):\n%s", name, n, tail(dl.stdout, 3000))
		}
	}
}

// kill -9 at three random points of a 250-workload export to Dependency-
// Track 5.0 (BOMSTREAM_KILL_WORKLOADS), then a clean run: every project
// holds its workload's BOM, and no BOM was uploaded twice (the double
// counts accepted uploads per BOM).
func TestKill9DuringDependencyTrackExport(t *testing.T) {
	bin := bomstreamBinary(t)
	workloads := benchEnvInt(t, "BOMSTREAM_KILL_WORKLOADS", 250)
	const kills = 3
	dt := dtracktest.New(t, dtracktest.Options{Version: dtracktest.Line50, ProcessingDelay: 2 * time.Millisecond})
	dir := t.TempDir()
	tree, data := filepath.Join(dir, "m"), filepath.Join(dir, "data")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRound(t, tree, workloads, 0)
	want := serving(expect(t, tree, "default"))
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, "sinks:\n"+dtSink(t, dt, dir, "dt", ""))
	outFile, errFile, _, errPath := processLogs(t, dir)
	args := []string{"run", "--config", conf, "--manifests", tree, "--interval", "1h", "--data-dir", data}
	imported := func() int {
		n := 0
		for _, c := range dt.ProcessedAll() {
			n += c
		}
		return n
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	proc := startProcess(t, bin, outFile, errFile, args...)
	for k := range kills {
		// A random point inside the export: after some imports, before all.
		at := (k+1)*workloads/(kills+2) + rng.IntN(workloads/(kills+2))
		eventually(t, fmt.Sprintf("%d imports before kill #%d", at, k+1), func() bool { return imported() >= at })
		proc.kill(t)
		t.Logf("kill -9 #%d after %d imports", k+1, imported())
		fmt.Fprintf(errFile, "\n=== kill -9 #%d\n", k+1)
		proc = startProcess(t, bin, outFile, errFile, args...)
	}
	waitSynced(t, errPath, kills)
	drain(t, proc, bin, outFile, errFile, args, 5*time.Minute)
	if n := len(dt.Projects()); n != workloads+2 {
		t.Errorf("%d projects, want %d workloads and 2 parents", n, workloads)
	}
	twice := 0
	for _, e := range want {
		p, ok := dt.Project("default/"+e.Workload.Namespace+"/"+e.Workload.Kind+"/"+e.Workload.Name, "current")
		if !ok || p.BomHash != e.BomHash || !p.Active || !p.IsLatest || p.Parent == "" {
			t.Errorf("%s: project %+v, want BOM %s, active, latest, under its namespace", wkey(e.Workload), p.BomHash, e.BomHash)
		}
		if n := dt.Uploads(e.BomHash); n != 1 {
			twice++
			if twice <= 5 {
				t.Errorf("%s: uploaded %d times", wkey(e.Workload), n)
			}
		}
	}
	if twice > 0 {
		t.Fatalf("%d of %d BOMs uploaded more than once", twice, len(want))
	}
}
