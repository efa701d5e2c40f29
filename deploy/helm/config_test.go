package helm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildDir  string
)

// bomstreamBinary builds cmd/bomstream once for the package.
func bomstreamBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "bomstream-chart-test-*")
		if buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "bomstream")
		gobin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		out, err := exec.Command(gobin, "build", "-o", binary, "github.com/bomstream/bomstream/cmd/bomstream").CombinedOutput()
		if err != nil {
			buildErr = err
			binary = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build bomstream: %v\n%s", buildErr, binary)
	}
	return binary
}

// The configuration file the chart renders is one bomstream accepts, for
// every variant and with every option the values offer: bomstream itself
// reads it (every key checked strictly, every component's settings
// validated, every sink's config decoded) through `bomstream sink check`,
// which loads the configuration as the pods do and opens no connection for
// the stdout sink. The ConfigMap is put where the pods mount it, but in a
// temporary directory.
func TestConfigFileLoads(t *testing.T) {
	bin := bomstreamBinary(t)
	everything := append(append([]string{
		"shape=distributed", "cluster=prod-eu",
		"watch.mode=namespaced", "watch.namespaces={ml,serving}",
		"watch.probeInterval=1m", "watch.discoveryInterval=2m", "watch.watchTimeout=10m",
		"watch.qps=5", "watch.burst=10",
		"collector.envAllow={MY_MODEL}", "collector.labelAllow={team}", "collector.argAllow={--served-name}",
		"collector.leaderElection.leaseDuration=30s",
		"collector.profiles.profiles[0].group=example.com", "collector.profiles.profiles[0].kind=ModelServer",
		"collector.profiles.profiles[0].workload=true", "collector.profiles.profiles[0].components[0].path=spec.template",
		"collector.profiles.profiles[0].components[0].name=main",
		"collector.profiles.profiles[0].components[0].containers[0].list=spec.containers",
		"transformer.rules.runtimes[0].name=myengine", "transformer.rules.runtimes[0].title=My Engine",
		"transformer.rules.runtimes[0].images[0].pattern=(^|/)acme/engine$",
		"stream.maxAge=720h", "stream.maxBytes=10000000000",
		"sinks.file.fsync=false", "sinks.file.runner.concurrency=8",
		"sinks.gcs.runner.maxAttempts=0", "sinks.gcs.runner.attemptTimeout=1m",
		"sinks.dependencytrack.hierarchy=false", "sinks.dependencytrack.autoCreate=false",
		"sinks.dependencytrack.pollInterval=5s",
		"sinks.dependencytrack.parents=plain",
		"sinks.gcs.specVersion=1.7", "sinks.file.specVersion=1.6",
		"sinks.oci.plainHTTP=true", "sinks.oci.checkRegistries={registry.example.com}",
		"log.level=debug", "log.format=console",
	}, allSinks...), natsAuth...)
	cases := map[string][]string{"every option": everything}
	for _, v := range variants {
		cases[v.String()] = append(append([]string(nil), v.sets...), "sinks.stdout.enabled=true")
	}
	for _, name := range sortedKeys(cases) {
		t.Run(name, func(t *testing.T) {
			vals := values(t, cases[name]...)
			if name == "every option" { // --set reads braces as lists and 0.25 as a string
				vals["watch"].(map[string]any)["maxTombstoneShare"] = 0.25
				s := vals["sinks"].(map[string]any)
				s["gcs"].(map[string]any)["pathTemplate"] = "{prefix}/{cluster}/{namespace}/{kind}/{name}/{bomHash}.cdx.json"
				s["dependencytrack"].(map[string]any)["projectName"] = "{{.Cluster}}/{{.Namespace}}/{{.Name}}"
			}
			r := mustRender(t, releaseName, releaseNamespace, vals)
			cm := convert[corev1.ConfigMap](t, r.one(t, "ConfigMap", "bomstream"))
			dir := t.TempDir()
			for key, text := range cm.Data {
				text = strings.ReplaceAll(text, "/etc/bomstream/", dir+"/")
				if err := os.WriteFile(filepath.Join(dir, key), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if name == "every option" && (cm.Data["profiles.yaml"] == "" || cm.Data["rules.yaml"] == "") {
				t.Fatalf("profiles and rules not rendered: %v", sortedKeys(cm.Data))
			}
			if name == "every option" {
				for _, want := range []string{"specVersion: \"1.7\"", "parents: plain"} {
					if !strings.Contains(cm.Data["bomstream.yaml"], want) {
						t.Errorf("bomstream.yaml lacks %s:\n%s", want, cm.Data["bomstream.yaml"])
					}
				}
			}
			cmd := exec.Command(bin, "sink", "check", "stdout", "--config", filepath.Join(dir, "bomstream.yaml"))
			cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "sink stdout (stdout) has no checks") {
				t.Errorf("bomstream refuses the rendered configuration: %v\n%s\n--- bomstream.yaml:\n%s", err, out, cm.Data["bomstream.yaml"])
			}
		})
	}
}
