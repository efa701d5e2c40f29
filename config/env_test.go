package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"nats-url": "BOMSTREAM_NATS_URL", "config": "BOMSTREAM_CONFIG", "api-token-file": "BOMSTREAM_API_TOKEN_FILE"} {
		if got := EnvName(flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

// A variable sets its flag unless the command line did; an old name works
// with a warning naming the new one; neither a warning nor an error holds
// the value.
func TestEnvSetFlags(t *testing.T) {
	const secret = "s3cret-value"
	vars := map[string]string{
		"BOMSTREAM_NATS_URL":  "nats://env:4222",
		"BOMSTREAM_CLUSTER":   "from-env",
		"OLD_TOKEN":           secret,
		"BOMSTREAM_REPLICAS":  secret,
		"BOMSTREAM_NAMESPACE": "a,b",
	}
	var warnings []string
	e := Env{
		Getenv:  func(k string) string { return vars[k] },
		Aliases: map[string][]string{"api-token": {"OLD_TOKEN"}},
		Warn:    func(s string) { warnings = append(warnings, s) },
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	url := fs.String("nats-url", "", "")
	cluster := fs.String("cluster", "", "")
	token := fs.String("api-token", "", "")
	fs.Int("replicas", 1, "")
	namespaces := fs.StringSlice("namespace", nil, "")
	FromEnv(fs)
	unmarked := fs.String("namespace-filter", "", "") // a flag FromEnv did not mark
	vars["BOMSTREAM_NAMESPACE_FILTER"] = "x"
	if err := fs.Parse([]string{"--cluster", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	err := e.SetFlags(fs)
	if *url != "nats://env:4222" || *cluster != "from-flag" || *token != secret || !slices.Equal(*namespaces, []string{"a", "b"}) {
		t.Errorf("flags: url %q, cluster %q, token %q, namespace %v", *url, *cluster, *token, *namespaces)
	}
	if *unmarked != "" {
		t.Errorf("an unmarked flag was set from %s", EnvName("namespace-filter"))
	}
	if !fs.Changed("nats-url") || !fs.Changed("api-token") {
		t.Error("a flag the environment set is not marked as set")
	}
	if len(warnings) != 1 || warnings[0] != "OLD_TOKEN is deprecated; set BOMSTREAM_API_TOKEN instead" {
		t.Errorf("warnings %q", warnings)
	}
	if err == nil || err.Error() != "BOMSTREAM_REPLICAS: not a valid value for --replicas (int)" {
		t.Errorf("error %v", err)
	}
	// The new name wins over the old one, without a warning.
	vars["BOMSTREAM_API_TOKEN"] = "new"
	warnings = nil
	if v, ok := e.Lookup("api-token"); v != "new" || !ok || warnings != nil {
		t.Errorf("Lookup = %q, %v (warnings %q)", v, ok, warnings)
	}
	if strings.Contains(strings.Join(warnings, ""), secret) {
		t.Error("a warning holds a value")
	}
}
