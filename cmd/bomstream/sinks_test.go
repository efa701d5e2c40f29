package main

// The sinks of issue "Sinks" end to end: `bomstream run` with the GCS,
// Dependency-Track and OCI sinks at once against their in-process fakes,
// the dead-letter workflow, and `sink check`.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
)

const pinnedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: llm-%d, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: %s@%s
        args: [--model, org/model-%d, --revision, "%d"]
`

// startAllSinks starts the three stores (fake-gcs-server, the
// Dependency-Track double with a key allowed everything, an in-process OCI
// registry) and writes a configuration with a sink for each; conf is its
// path.
func startAllSinks(t *testing.T) (g *gcstest.Server, dt *dtracktest.Server, reg *ocitest.Registry, conf string) {
	t.Helper()
	g = gcstest.Start(t, "boms")
	dt = dtracktest.New(t, dtracktest.Options{})
	key := dt.NewKey(dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement, dtracktest.ProjectCreationUpload)
	reg = ocitest.Start(t, ocitest.GGCR, ocitest.Options{})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "dt-key")
	writeFile(t, keyFile, key+"\n")
	blocks := map[string]any{"gcs": g.Config("boms"), "oci": reg.Config(t),
		"dt": map[string]any{"url": dt.URL(), "apiKeyFile": keyFile, "pollInterval": "50ms"}}
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	conf = filepath.Join(dir, "bomstream.yaml")
	// Fast retries: the outage below is short.
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: gcs, type: gcs, config: %s, runner: {baseBackoff: 50ms, maxBackoff: 500ms}}
- {name: dt, type: dependencytrack, config: %s, runner: {baseBackoff: 50ms, maxBackoff: 500ms}}
- {name: oci, type: oci, config: %s, runner: {baseBackoff: 50ms, maxBackoff: 500ms}}
`, enc(blocks["gcs"]), enc(blocks["dt"]), enc(blocks["oci"])))
	return g, dt, reg, conf
}

// pinnedTree writes n Deployments whose images are pinned by digest to
// images pushed to reg.
func pinnedTree(t *testing.T, reg *ocitest.Registry, n, revision int) string {
	t.Helper()
	tree := t.TempDir()
	for i := range n {
		img := reg.PushImage(t, fmt.Sprintf("models/llm-%d", i), "v1")
		repo, _, _ := strings.Cut(img.Image, ":v1")
		writeFile(t, filepath.Join(tree, fmt.Sprintf("llm-%d.yaml", i)), fmt.Sprintf(pinnedDeployment, i, repo, img.Digest, i, revision))
	}
	return tree
}

// With all three sinks configured, one sink that is down for a while delays
// neither of the other two, and catches up by itself once it is back.
func TestRunWithAllThreeSinks(t *testing.T) {
	const n = 6
	g, dt, reg, conf := startAllSinks(t)
	tree := pinnedTree(t, reg, n, 1)
	data := filepath.Join(t.TempDir(), "data")
	c := newCLI(t)
	c.httpAddr = make(chan string, 1)

	dt.Down(0) // Dependency-Track is down from the start
	stop := startRun(t, c, "--config", conf, "--manifests", tree, "--interval", "200ms", "--data-dir", data, "--http-listen", "127.0.0.1:0")
	base := "http://" + <-c.httpAddr
	want := serving(expect(t, tree, "default"))
	if len(want) != n {
		t.Fatalf("%d serving workloads, want %d", len(want), n)
	}
	eventually(t, "every BOM in GCS and in the registry while Dependency-Track is down", func() bool {
		return countGCSBOMs(t, g) == n && countReferrers(t, reg, want) == n
	})
	eventually(t, "/readyz naming the degraded sink", func() bool {
		_, body := httpGet(t, base+"/readyz")
		return strings.Contains(body, "sink dt: degraded") && strings.Contains(body, "sink gcs: up") && strings.Contains(body, "sink oci: up")
	})
	if got := len(dt.ProcessedAll()); got != 0 {
		t.Fatalf("Dependency-Track processed %d BOMs while down", got)
	}
	dt.Up()
	eventually(t, "Dependency-Track caught up", func() bool { return len(dt.ProcessedAll()) == n })
	for _, e := range want {
		if got := dt.Processed(e.BomHash); got != 1 {
			t.Errorf("%s processed %d times by Dependency-Track, want once", wkey(e.Workload), got)
		}
	}
	eventually(t, "/readyz 200 again", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == 200 })
	if r := stop(); r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, tail(r.stderr, 3000))
	}
}

func countGCSBOMs(t *testing.T, g *gcstest.Server) int {
	n := 0
	for _, o := range g.Objects(t, "boms/") {
		if strings.HasSuffix(o.Name, ".cdx.json") && !strings.HasSuffix(o.Name, "/latest.cdx.json") {
			n++
		}
	}
	return n
}

func countReferrers(t *testing.T, reg *ocitest.Registry, want map[string]expectation) int {
	n := 0
	for _, e := range want {
		repo := "models/" + e.Workload.Name
		for _, d := range digestsOf(t, e) {
			n += len(reg.Referrers(t, repo, d, "application/vnd.cyclonedx+json"))
		}
	}
	return n
}

// digestsOf is the manifest digests a workload's BOM names.
func digestsOf(t *testing.T, e expectation) []string {
	t.Helper()
	var bom struct {
		Components []struct {
			Type   string `json:"type"`
			Hashes []struct {
				Content string `json:"content"`
			} `json:"hashes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(e.BOM, &bom); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range bom.Components {
		if c.Type == "container" {
			for _, h := range c.Hashes {
				out = append(out, "sha256:"+h.Content)
			}
		}
	}
	return out
}

// A BOM the store rejects lands on the dead-letter stream with the store's
// reason; `dlq list` and `dlq show` tell what, when and why; `dlq retry`
// puts it back once the cause is fixed, and the entry leaves the stream
// only then. Without a running owner and through one.
func TestDeadLetterWorkflow(t *testing.T) {
	dt := dtracktest.New(t, dtracktest.Options{})
	key := dt.NewKey(dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement, dtracktest.ProjectCreationUpload)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "dt-key")
	writeFile(t, keyFile, key+"\n")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: dt, type: dependencytrack, config: {url: %q, apiKeyFile: %q, pollInterval: 50ms}}
`, dt.URL(), keyFile))
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	want := serving(expect(t, tree, "default"))
	chat := want["ml/Deployment/chat"]
	dt.RejectBOM(chat.BomHash, "$.components[0].type: does not have a value in the enumeration")
	data := filepath.Join(dir, "data")
	c := newCLI(t)

	r := c.run("run", "--config", conf, "--manifests", tree, "--once", "--data-dir", data)
	if r.err == nil || !strings.Contains(r.err.Error(), "dead-lettered") {
		t.Fatalf("run --once with a rejected BOM: err %v (want a non-zero exit naming the dead letter)\n%s", r.err, r.stdout)
	}
	list := c.mustRun("dlq", "list", "--data-dir", data, "--config", conf)
	mustContain(t, "dlq list", list.stdout, "sink.dt", "ml/Deployment/chat", "Dependency-Track rejected", "1 dead letters")
	id := strings.Fields(strings.Split(list.stdout, "\n")[1])[0]
	show := c.mustRun("dlq", "show", id, "--data-dir", data, "--config", conf)
	mustContain(t, "dlq show", show.stdout, "stage:", "sink.dt", "reason:", "does not have a value in the enumeration",
		"Bomstream-Bom-Hash: "+chat.BomHash, `"bomFormat":"CycloneDX"`)

	// Still rejected: the retry fails and the entry stays.
	r = c.run("dlq", "retry", "--sink", "dt", "--data-dir", data, "--config", conf)
	if r.err == nil || !strings.Contains(r.stdout, "still failing") {
		t.Fatalf("retry while rejected: %v\n%s", r.err, r.stdout)
	}
	mustContain(t, "dlq list after a failed retry", c.mustRun("dlq", "list", "--data-dir", data, "--config", conf).stdout, "1 dead letters")

	// Fixed: through a running owner this time.
	dt.AcceptBOM(chat.BomHash)
	c.httpAddr = make(chan string, 1)
	stop := startRun(t, c, "--config", conf, "--manifests", tree, "--interval", "200ms", "--data-dir", data, "--http-listen", "127.0.0.1:0")
	base := "http://" + <-c.httpAddr
	eventually(t, "the owner ready", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == 200 })
	var retried result
	eventually(t, "a retry through the running owner", func() bool {
		retried = c.run("dlq", "retry", "--sink", "dt", "--data-dir", data, "--config", conf)
		return retried.err == nil
	})
	mustContain(t, "dlq retry", retried.stdout, "1 retried and removed, 0 still failing")
	if got := dt.Processed(chat.BomHash); got != 1 {
		t.Fatalf("the retried BOM was processed %d times", got)
	}
	mustContain(t, "dlq list after the retry", c.mustRun("dlq", "list", "--data-dir", data, "--config", conf).stdout, "0 dead letters")
	if r := stop(); r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
}

// `bomstream sink check NAME` runs the sink's checks once and says what to
// fix; a sink without checks says so.
func TestSinkCheck(t *testing.T) {
	dt := dtracktest.New(t, dtracktest.Options{})
	weak := dt.NewKey(dtracktest.BOMUpload)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "dt-key")
	writeFile(t, keyFile, weak+"\n")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: dt, type: dependencytrack, config: {url: %q, apiKeyFile: %q}}
- {name: files, type: file, config: {dir: %q}}
`, dt.URL(), keyFile, filepath.Join(dir, "boms")))
	c := newCLI(t)
	r := c.run("sink", "check", "dt", "--config", conf)
	if r.err == nil || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout, "ok    Dependency-Track reachable") {
		t.Fatalf("check with a weak key: %v\n%s", r.err, r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, weak) {
		t.Fatal("the API key reached the output")
	}
	writeFile(t, keyFile, dt.NewKey(dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement, dtracktest.ProjectCreationUpload)+"\n")
	r = c.mustRun("sink", "check", "dt", "--config", conf)
	if strings.Contains(r.stdout, "FAIL") {
		t.Fatalf("check with a good key:\n%s", r.stdout)
	}
	mustContain(t, "file sink check", c.mustRun("sink", "check", "files", "--config", conf).stdout, "has no checks")
	if _, err := os.Stat(filepath.Join(dir, "bomstream-data")); !os.IsNotExist(err) {
		t.Fatal("sink check created a data directory")
	}
}

// A store that hangs (it takes the request and never answers) costs its
// sink only the attempt timeout per try: the other sinks export everything,
// /readyz names the hung sink, and once the store answers again it catches
// up with every BOM once.
func TestRunWithAHungStore(t *testing.T) {
	const n = 4
	g, dt, reg, conf := startAllSinks(t)
	raw, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	// The GCS sink gives an attempt up after 1s.
	text := strings.Replace(string(raw), "maxBackoff: 500ms}}\n- {name: dt", "maxBackoff: 500ms, attemptTimeout: 1s}}\n- {name: dt", 1)
	if text == string(raw) {
		t.Fatalf("no GCS runner block in\n%s", raw)
	}
	writeFile(t, conf, text)
	tree := pinnedTree(t, reg, n, 1)
	release := make(chan struct{})
	var hung atomic.Int64
	g.SetFault(func(*http.Request) int {
		hung.Add(1)
		<-release // never answers until released; the client gives up first
		return http.StatusServiceUnavailable
	})
	var once sync.Once
	unhang := func() { once.Do(func() { g.SetFault(nil); close(release) }) }
	t.Cleanup(unhang)

	c := newCLI(t)
	c.httpAddr = make(chan string, 1)
	stop := startRun(t, c, "--config", conf, "--manifests", tree, "--interval", "200ms", "--data-dir", filepath.Join(t.TempDir(), "data"), "--http-listen", "127.0.0.1:0")
	base := "http://" + <-c.httpAddr
	want := serving(expect(t, tree, "default"))
	eventually(t, "every BOM in Dependency-Track and the registry while GCS hangs", func() bool {
		return len(dt.ProcessedAll()) == n && countReferrers(t, reg, want) == n
	})
	eventually(t, "/readyz naming the hung sink", func() bool {
		_, body := httpGet(t, base+"/readyz")
		return strings.Contains(body, "sink gcs: degraded") && strings.Contains(body, "sink dt: up") && strings.Contains(body, "sink oci: up")
	})
	if hung.Load() < 2 {
		t.Fatalf("GCS took %d requests: the sink did not retry after its attempt timeout", hung.Load())
	}
	if got := countGCSBOMs(t, g); got != 0 {
		t.Fatalf("GCS holds %d BOMs while it hangs", got)
	}
	unhang()
	eventually(t, "GCS caught up", func() bool { return countGCSBOMs(t, g) == n })
	eventually(t, "/readyz 200 again", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == 200 })
	if r := stop(); r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, tail(r.stderr, 3000))
	}
	if got := countGCSBOMs(t, g); got != n {
		t.Fatalf("GCS holds %d BOMs, want %d, each once", got, n)
	}
}
