package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/process"
)

// loadWith parses args like a pipeline command and returns the process.Config that
// common.load builds from the file, vars and flags.
func loadWith(t *testing.T, vars map[string]string, args ...string) (process.Config, error) {
	t.Helper()
	var (
		c   common
		cfg process.Config
		err error
	)
	cmd := &cobra.Command{Use: "x", SilenceUsage: true, SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
		cfg, err = c.load(cmd, func(k string) string { return vars[k] }, nil)
		return nil
	}}
	c.bind(cmd.Flags())
	cmd.SetArgs(args)
	if xerr := cmd.Execute(); xerr != nil {
		t.Fatal(xerr)
	}
	return cfg, err
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, file, `cluster: from-file
stream:
  dataDir: /file/data
  url: nats://file:4222
log:
  level: error
  format: json
http:
  listen: 127.0.0.1:9001
`)
	other := filepath.Join(dir, "other.yaml")
	writeFile(t, other, "cluster: from-other-file\n")
	vars := map[string]string{
		"BOMSTREAM_CLUSTER":   "from-env",
		"BOMSTREAM_DATA_DIR":  "/env/data",
		"BOMSTREAM_LOG_LEVEL": "warn",
	}

	cfg, err := loadWith(t, vars, "--config", file, "--cluster", "from-flag", "--log-format", "console")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ field, got, want string }{
		{"cluster (flag beats env and file)", cfg.Cluster, "from-flag"},
		{"stream.dataDir (env beats file)", cfg.Stream.DataDir, "/env/data"},
		{"log.level (env beats file)", cfg.Log.Level, "warn"},
		{"log.format (flag beats file)", cfg.Log.Format, "console"},
		{"stream.url (file alone)", cfg.Stream.URL, "nats://file:4222"},
		{"http.listen (file alone)", cfg.HTTP.Listen, "127.0.0.1:9001"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}

	// BOMSTREAM_CONFIG names the file; --config beats it.
	cfg, err = loadWith(t, map[string]string{"BOMSTREAM_CONFIG": file})
	if err != nil || cfg.Cluster != "from-file" {
		t.Errorf("with BOMSTREAM_CONFIG: cluster %q (%v), want from-file", cfg.Cluster, err)
	}
	cfg, err = loadWith(t, map[string]string{"BOMSTREAM_CONFIG": file}, "--config", other)
	if err != nil || cfg.Cluster != "from-other-file" {
		t.Errorf("with --config over BOMSTREAM_CONFIG: cluster %q (%v), want from-other-file", cfg.Cluster, err)
	}

	// Defaults when nothing is set.
	cfg, err = loadWith(t, nil)
	if err != nil || cfg.Cluster != "default" || cfg.Stream.DataDir != "bomstream-data" {
		t.Errorf("defaults: cluster %q, dataDir %q (%v)", cfg.Cluster, cfg.Stream.DataDir, err)
	}

	if _, err := loadWith(t, map[string]string{"BOMSTREAM_STREAM_REPLICAS": "three"}); err == nil || !strings.Contains(err.Error(), "BOMSTREAM_STREAM_REPLICAS") {
		t.Errorf("bad BOMSTREAM_STREAM_REPLICAS: err = %v, want one naming the variable", err)
	}
}

// --nats-creds beats BOMSTREAM_NATS_CREDS, which beats stream.credsFile;
// a credentials file needs an external server.
func TestConfigNATSCreds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bomstream.yaml")
	writeFile(t, file, "stream:\n  url: nats://hub:4222\n  credsFile: /file/nats.creds\n")
	vars := map[string]string{"BOMSTREAM_NATS_CREDS": "/env/nats.creds"}
	for _, c := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{nil, nil, "/file/nats.creds"},
		{vars, nil, "/env/nats.creds"},
		{vars, []string{"--nats-creds", "/flag/nats.creds"}, "/flag/nats.creds"},
	} {
		cfg, err := loadWith(t, c.vars, append([]string{"--config", file}, c.args...)...)
		if err != nil || cfg.Stream.CredsFile != c.want {
			t.Errorf("vars %v, flags %v: stream.credsFile %q (%v), want %q", c.vars, c.args, cfg.Stream.CredsFile, err, c.want)
		}
	}
	cfg, err := loadWith(t, nil, "--nats-creds", "/flag/nats.creds")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Stream.Validate(); err == nil || !strings.Contains(err.Error(), "stream.credsFile: only for an external server") {
		t.Errorf("--nats-creds without --nats-url: %v", err)
	}
}

// TestConfigPrecedenceRun checks that the chosen values reach the pipeline:
// the cluster name is the first directory level of the file sink.
func TestConfigPrecedenceRun(t *testing.T) {
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	file := filepath.Join(t.TempDir(), "bomstream.yaml")
	writeFile(t, file, "cluster: from-file\n")
	c := newCLI(t)
	c.vars["BOMSTREAM_CLUSTER"] = "from-env"
	c.vars["BOMSTREAM_MANIFESTS"] = tree

	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--cluster", "from-flag"}, "from-flag"},
		{nil, "from-env"},
	} {
		sinkDir, dataDir := filepath.Join(t.TempDir(), "boms"), filepath.Join(t.TempDir(), "data")
		args := append([]string{"run", "--config", file, "--once", "--data-dir", dataDir, "--sink-dir", sinkDir}, tc.flags...)
		c.mustRun(args...)
		all, err := os.ReadDir(sinkDir)
		if err != nil {
			t.Fatal(err)
		}
		var ents []os.DirEntry
		for _, e := range all {
			if e.IsDir() {
				ents = append(ents, e) // a cluster each; the sink's journal aside
			}
		}
		if len(ents) != 1 || ents[0].Name() != tc.want {
			t.Errorf("flags %v: sink clusters %v, want only %s", tc.flags, ents, tc.want)
		}
	}
}

// noDefaultDirs fails when a command created the default data or sink
// directory in the working directory (the package directory, in a test).
func noDefaultDirs(t *testing.T) {
	t.Helper()
	for _, d := range []string{"bomstream-data", "boms"} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s was created in the working directory", d)
			_ = os.RemoveAll(d)
		}
	}
}

func TestConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, fmt.Sprintf(`cluster: "bad.name"
stream:
  replicas: 9
manifests:
  dir: %q
sinks:
- {name: file, type: file, config: {dir: %q}}
- {name: other, type: nosuch}
`, filepath.Join(dir, "no-such-dir"), filepath.Join(dir, "boms")))
	c := newCLI(t)

	r := c.run("run", "--config", bad, "--once", "--data-dir", dataDir)
	if r.err == nil {
		t.Fatal("run with an invalid configuration succeeded")
	}
	// Every problem is reported at once, each naming its field.
	mustContain(t, "error", r.err.Error(), "sinks[1].type", `"nosuch"`, "stream.replicas", "cluster:", "manifests.dir")
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data directory exists after a configuration error (stat: %v)", err)
	}

	unknown := filepath.Join(dir, "unknown.yaml")
	writeFile(t, unknown, "cluster: prod\nsinkz:\n- {type: file}\n")
	r = c.run("run", "--config", unknown, "--once", "--manifests", dir, "--data-dir", dataDir)
	if r.err == nil {
		t.Fatal("unknown key accepted")
	}
	mustContain(t, "error", r.err.Error(), "line 2", "sinkz", unknown)

	r = c.run("run", "--config", filepath.Join(dir, "missing.yaml"), "--once", "--manifests", dir, "--data-dir", dataDir)
	if r.err == nil || !strings.Contains(r.err.Error(), "missing.yaml") {
		t.Errorf("missing config file: err = %v", r.err)
	}

	r = c.run("run", "--once", "--data-dir", dataDir)
	if r.err == nil || !strings.Contains(r.err.Error(), "--once needs --manifests DIR") {
		t.Errorf("run --once without --manifests: err = %v", r.err)
	}
	r = c.run("run", "--data-dir", dataDir)
	if r.err == nil || !strings.Contains(r.err.Error(), "--manifests DIR") {
		t.Errorf("run without a source: err = %v", r.err)
	}
	r = c.run("run", "--manifests", dir, "--once", "--data-dir", dataDir, "--http-listen", "nonsense")
	if r.err == nil || !strings.Contains(r.err.Error(), "http.listen") {
		t.Errorf("bad --http-listen: err = %v", r.err)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data directory exists after configuration errors (stat: %v)", err)
	}
	noDefaultDirs(t)
}

// A rules override that reads a flag's value needs the collector to keep it:
// configuration names the flag until collector.argAllow has it.
func TestConfigRulesOverrideArguments(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	writeFile(t, rules, "runtimes: []\nmodels:\n  flags: [--my-model]\nkeepValues: [--my-port]\n")
	cfg := process.DefaultConfig()
	cfg.Transformer.RulesFile = rules
	err := cfg.Validate(nil)
	if err == nil || !strings.Contains(err.Error(), "collector.argAllow") || !strings.Contains(err.Error(), "--my-model, --my-port") {
		t.Fatalf("Validate = %v, want an argAllow error naming --my-model, --my-port", err)
	}
	cfg.Collector.ArgAllow = []string{"--my-model", "--my-port"}
	if err := cfg.Validate(nil); err != nil {
		t.Fatalf("with argAllow: %v", err)
	}
}

// Friction (issue "The store survives its users"): configuration errors
// name the configuration path and line, all of it is checked before anything
// is created, and a busy HTTP address fails the start at once.
func TestConfigErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, `streem: {dataDir: x}
stream:
  replicas: three
sinks:
- name: a
  type: file
  config: {dri: boms, fsync: sometimes}
`)
	c := newCLI(t)
	r := c.run("run", "--config", conf, "--manifests", examplesDir, "--once", "--data-dir", data)
	if r.err == nil {
		t.Fatal("a broken configuration was accepted")
	}
	for _, want := range []string{"line 1: streem: unknown key (known here: ", "line 3: stream.replicas: cannot unmarshal the text `three` into int"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("error %q does not contain %q", r.err, want)
		}
	}
	if strings.Contains(r.err.Error(), "main.Config") {
		t.Errorf("error %q names a Go type", r.err)
	}
	writeFile(t, conf, `sinks:
- name: a
  type: file
  config: {dri: boms}
`)
	r = c.run("run", "--config", conf, "--manifests", examplesDir, "--once", "--data-dir", data)
	if r.err == nil || !strings.Contains(r.err.Error(), `sinks[0].config: unknown key "dri" (known: dir, flushInterval, fsync)`) {
		t.Fatalf("sink config error: %v", r.err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the data directory was created before the configuration was checked (%v)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r = c.run("run", "--manifests", examplesDir, "--once", "--data-dir", data, "--http-listen", ln.Addr().String())
	if r.err == nil || !strings.Contains(r.err.Error(), "http.listen") || !strings.Contains(r.err.Error(), "address already in use") {
		t.Fatalf("busy --http-listen: %v", r.err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatal("the data directory was created although the HTTP address was busy")
	}
}

// Every variable that set a flag's setting before the variables were
// derived from the flags still sets it, under the name config.EnvName
// derives (BOMSTREAM_MANIFESTS: TestConfigPrecedenceRun); so does each
// variable of a setting no flag sets. A bad value is named by its variable,
// never quoted.
func TestConfigEnvDerivedFromFlags(t *testing.T) {
	var (
		c   common
		cfg process.Config
		err error
	)
	load := func(vars map[string]string) api.Config {
		t.Helper()
		cmd := &cobra.Command{Use: "x", SilenceUsage: true, SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err = c.load(cmd, func(k string) string { return vars[k] }, nil)
			cfg.API = apiConfig(cmd, cfg.API)
			return nil
		}}
		c = common{}
		c.bind(cmd.Flags())
		bindAPI(cmd)
		cmd.SetArgs(nil)
		if xerr := cmd.Execute(); xerr != nil {
			t.Fatal(xerr)
		}
		return cfg.API
	}
	file := filepath.Join(t.TempDir(), "bomstream.yaml")
	writeFile(t, file, "collector: {defaultNamespace: from-file}\n")
	for flag, field := range map[string]func(process.Config) string{
		"config": func(c process.Config) string {
			return map[bool]string{true: file}[c.Collector.DefaultNamespace == "from-file"]
		},
		"cluster":        func(c process.Config) string { return c.Cluster },
		"nats-url":       func(c process.Config) string { return c.Stream.URL },
		"nats-creds":     func(c process.Config) string { return c.Stream.CredsFile },
		"data-dir":       func(c process.Config) string { return c.Stream.DataDir },
		"nats-listen":    func(c process.Config) string { return c.Stream.Listen },
		"http-listen":    func(c process.Config) string { return c.HTTP.Listen },
		"log-level":      func(c process.Config) string { return c.Log.Level },
		"log-format":     func(c process.Config) string { return c.Log.Format },
		"api-listen":     func(c process.Config) string { return c.API.Listen },
		"api-token-file": func(c process.Config) string { return c.API.TokenFile },
		"api-client-ca":  func(c process.Config) string { return c.API.ClientCA },
		// Settings without a flag.
		"nats-nkey":            func(c process.Config) string { return c.Stream.NKeyFile },
		"nats-user":            func(c process.Config) string { return c.Stream.User },
		"nats-password":        func(c process.Config) string { return c.Stream.Password },
		"nats-token":           func(c process.Config) string { return c.Stream.Token },
		"nats-tls-ca":          func(c process.Config) string { return c.Stream.TLSCA },
		"nats-tls-cert":        func(c process.Config) string { return c.Stream.TLSCert },
		"nats-tls-key":         func(c process.Config) string { return c.Stream.TLSKey },
		"nats-listen-token":    func(c process.Config) string { return c.Stream.ListenAuth.Token },
		"nats-listen-user":     func(c process.Config) string { return c.Stream.ListenAuth.User },
		"nats-listen-password": func(c process.Config) string { return c.Stream.ListenAuth.Password },
		"rules":                func(c process.Config) string { return c.Transformer.RulesFile },
		"profiles":             func(c process.Config) string { return c.Collector.ProfilesFile },
		"findings-rules":       func(c process.Config) string { return c.Findings.RulesFile },
		"stream-replicas":      func(c process.Config) string { return fmt.Sprint(c.Stream.Replicas) },
	} {
		name, value := "BOMSTREAM_"+strings.ToUpper(strings.ReplaceAll(flag, "-", "_")), "3"
		if flag == "config" {
			value = file
		}
		load(map[string]string{name: value})
		if err != nil || field(cfg) != value {
			t.Errorf("%s=%s: %s is %q (%v)", name, value, flag, field(cfg), err)
		}
	}
	load(map[string]string{"BOMSTREAM_STREAM_REPLICAS": "s3cret", "BOMSTREAM_NATS_URL": "x"})
	if err == nil || !strings.Contains(err.Error(), "BOMSTREAM_STREAM_REPLICAS") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a bad BOMSTREAM_STREAM_REPLICAS: %v", err)
	}
}
