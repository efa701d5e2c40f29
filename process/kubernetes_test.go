package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/sinks/registry"
)

// The example configuration's kubernetes: section loads and validates, and
// errors in it name the field.
func TestKubernetesConfigSection(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "deploy", "bomstream.yaml"), config.Env{Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Manifests.Dir = "" // relative to the repository root
	if err := cfg.Validate(registry.Builtin()); err != nil {
		t.Fatalf("deploy/bomstream.yaml: %v", err)
	}
	k := cfg.kubeConfig()
	if k.Cluster != cfg.Cluster || k.NamespaceSelector != "bomstream.dev/enabled=true" || k.LeaderElection.LeaseDuration != 15*time.Second || k.MaxTombstoneShare != 0.5 {
		t.Errorf("kubernetes section = %+v", k)
	}
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("kubernetes:\n  namespaceSelector: 'a in (b'\n  leaderElection: {leaseDuration: 1s, renewDeadline: 2s}\n  watchTimeout: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(file, config.Env{Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(registry.Builtin())
	if err == nil {
		t.Fatal("a broken kubernetes section validated")
	}
	for _, want := range []string{"kubernetes.namespaceSelector", "kubernetes.leaderElection", "kubernetes.watchTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

// noEnv is an environment that sets no variable.
func noEnv(string) string { return "" }
