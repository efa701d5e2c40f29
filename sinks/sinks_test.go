package sinks_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

func TestPermanent(t *testing.T) {
	base := errors.New("bad request")
	p := sinks.Permanent(base)
	if !sinks.IsPermanent(p) || !sinks.IsPermanent(fmt.Errorf("upload: %w", p)) {
		t.Fatal("permanent error not recognised through wrapping")
	}
	if !errors.Is(p, base) || p.Error() != "bad request" {
		t.Fatalf("Permanent hides its cause: %v", p)
	}
	if sinks.IsPermanent(base) || sinks.IsPermanent(nil) || sinks.Permanent(nil) != nil {
		t.Fatal("plain and nil errors must not be permanent")
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"file", "gcs-prod", "a_1"} {
		if err := sinks.ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "-x", "a*", "a>"} {
		if err := sinks.ValidateName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDecodeConfigIsStrict(t *testing.T) {
	var cfg struct {
		Dir     string        `yaml:"dir"`
		Timeout time.Duration `yaml:"timeout"`
	}
	if err := sinks.DecodeConfig(map[string]any{"dir": "x", "timeout": "30s"}, &cfg); err != nil || cfg.Dir != "x" || cfg.Timeout != 30*time.Second {
		t.Fatalf("got %+v, %v", cfg, err)
	}
	err := sinks.DecodeConfig(map[string]any{"dir": "x", "bucket": "y"}, &cfg)
	if err == nil || err.Error() != `unknown key "bucket" (known: dir, timeout)` {
		t.Fatalf("got %v", err)
	}
	if err := sinks.DecodeConfig(map[string]any{"dir": []any{"a"}}, &cfg); err == nil {
		t.Fatal("a list decoded into a string field")
	}
	if err := sinks.DecodeConfig(map[string]any{"timeout": "soon"}, &cfg); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("a bad duration: got %v", err)
	}
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("s3cr3t-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KEY": "from-env"}
	getenv := func(k string) string { return env[k] }
	if v, err := sinks.ReadSecret("apiKeyFile", file, "apiKeyEnv", "", getenv); err != nil || v != "s3cr3t-value" {
		t.Fatalf("file: %q, %v", v, err)
	}
	if v, err := sinks.ReadSecret("apiKeyFile", "", "apiKeyEnv", "KEY", getenv); err != nil || v != "from-env" {
		t.Fatalf("env: %q, %v", v, err)
	}
	if v, err := sinks.ReadSecret("apiKeyFile", "", "apiKeyEnv", "", getenv); err != nil || v != "" {
		t.Fatalf("neither: %q, %v", v, err)
	}
	for name, c := range map[string]struct{ file, env, want string }{
		"both":    {file, "KEY", "set one, not both"},
		"missing": {filepath.Join(dir, "nope"), "", "apiKeyFile " + filepath.Join(dir, "nope") + ": no such file"},
		"unset":   {"", "UNSET", "apiKeyEnv: environment variable UNSET is not set"},
	} {
		_, err := sinks.ReadSecret("apiKeyFile", c.file, "apiKeyEnv", c.env, getenv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: the error carries the secret: %v", name, err)
		}
	}
}

type recording struct {
	sinks.Sink
	calls int
}

func (r *recording) Name() string { return "real" }
func (r *recording) Export(context.Context, sinks.BOM) error {
	r.calls++
	return nil
}
func (r *recording) Tombstone(context.Context, sinks.Tombstone) error {
	r.calls++
	return nil
}
func (r *recording) Close() error { return nil }

func TestDryRunWritesNothing(t *testing.T) {
	inner := &recording{}
	d := sinks.DryRun(inner, nil)
	if d.Name() != "real-dryrun" {
		t.Fatalf("name %q", d.Name())
	}
	w := sinktest.Workload("w")
	if err := d.Export(context.Background(), sinktest.NewBOM(w, 1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Tombstone(context.Background(), sinktest.NewTombstone(w, 2)); err != nil {
		t.Fatal(err)
	}
	if inner.calls != 0 {
		t.Fatalf("dry run reached the sink %d times", inner.calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Export(ctx, sinktest.NewBOM(w, 3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// BOM.Check lets through only a body that is JSON and whose SHA-256 is
// its BomHash; every refusal is permanent and names the workload.
func TestBOMCheck(t *testing.T) {
	good := sinktest.NewBOM(sinktest.Workload("a"), 1)
	if err := good.Check(); err != nil {
		t.Fatalf("a good BOM: %v", err)
	}
	notJSON := good
	notJSON.Body = []byte("{not json")
	notJSON.BomHash = fmt.Sprintf("sha256:%x", sha256.Sum256(notJSON.Body))
	for name, c := range map[string]struct {
		b    sinks.BOM
		want string
	}{
		"malformed hash":  {func() sinks.BOM { b := good; b.BomHash = "sha256:ABC"; return b }(), "is not sha256:<hex>"},
		"other body":      {func() sinks.BOM { b := good; b.Body = append([]byte(" "), b.Body...); return b }(), "does not match bom hash"},
		"body is no JSON": {notJSON, "not JSON"},
	} {
		err := c.b.Check()
		if err == nil || !sinks.IsPermanent(err) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), good.Workload.String()) {
			t.Errorf("%s: %v, want a permanent error saying %q about %s", name, err, c.want, good.Workload)
		}
	}
}

// RegisterMetric returns the family an earlier sink registered, so that
// sinks of one type share it.
func TestRegisterMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "bomstream_test_total", Help: "Test."}
	first, err := sinks.RegisterMetric(reg, prometheus.NewCounterVec(opts, []string{"sink"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := sinks.RegisterMetric(reg, prometheus.NewCounterVec(opts, []string{"sink"}))
	if err != nil || second != first {
		t.Fatalf("second registration: %v, same family %v", err, second == first)
	}
	if _, err := sinks.RegisterMetric(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bomstream_test_total", Help: "Other."}, []string{"sink"})); err == nil {
		t.Fatal("a different collector under the same name registered")
	}
}
