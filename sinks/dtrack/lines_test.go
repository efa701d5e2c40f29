package dtrack_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// TestSuiteOnEveryLine runs this package's whole test suite again against
// a double of each other release line (4.12, 4.14 as of 4.14.4, 5.0 and
// 5.1's main), by running the test binary itself with the line in its
// environment; this process runs it on the double's default line (4.13).
func TestSuiteOnEveryLine(t *testing.T) {
	if os.Getenv(lineEnv) != "" {
		return // a run on one line: the parent asks for each
	}
	for _, l := range dtracktest.Lines() {
		if l == dtracktest.DefaultVersion {
			continue
		}
		t.Run(l, func(t *testing.T) {
			t.Parallel()
			args := []string{"-test.run", ".", "-test.skip", "TestSuiteOnEveryLine", "-test.count", "1", "-test.timeout", "10m"}
			if testing.Short() {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), lineEnv+"="+l)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the suite on Dependency-Track %s: %v\n%s", l, err, tail(string(out), 6000))
			}
			if !strings.Contains(string(out), "PASS") {
				t.Fatalf("the suite on Dependency-Track %s did not report PASS:\n%s", l, tail(string(out), 2000))
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
