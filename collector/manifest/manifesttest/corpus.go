// Package manifesttest finds the upstream manifest corpus for tests.
//
// The corpus (45 real manifests with an INDEX.md of expectations) is upstream
// material: tests read it in place and the project commits no copy.
package manifesttest

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvCorpus names the corpus folder explicitly.
const EnvCorpus = "BOMSTREAM_CORPUS"

// Corpus returns the corpus folder: $BOMSTREAM_CORPUS, else
// shared/fixtures/upstream in the working directory or one of its parents.
// When there is none the test is skipped with a message, except under
// CI=true, where a missing corpus fails the test.
func Corpus(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvCorpus); d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("%s=%s is not a directory", EnvCorpus, d)
		}
		return d
	}
	if d, ok := Find(); ok {
		return d
	}
	wd, _ := os.Getwd()
	if os.Getenv("CI") == "true" {
		t.Fatalf("upstream manifest corpus not found above %s: set %s (CI=true, so this fails instead of skipping)", wd, EnvCorpus)
	}
	t.Skipf("upstream manifest corpus not found above %s; set %s to run this test", wd, EnvCorpus)
	return ""
}

// Find looks for the corpus as Corpus does, without failing or skipping.
func Find() (string, bool) {
	if d := os.Getenv(EnvCorpus); d != "" {
		return d, true
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "fixtures", "upstream")
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, true
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}
