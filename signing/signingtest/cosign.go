package signingtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CosignVersion is the cosign the interoperability tests run (make cosign
// builds the same).
const CosignVersion = "v3.1.3"

// Cosign returns $BOMSTREAM_COSIGN_BIN, or cosign built from the Go module
// proxy into the user cache, as make cosign does (seconds from the Go
// build cache). Under CI=true a cosign that cannot be had fails the test;
// elsewhere it skips it, saying why.
func Cosign(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BOMSTREAM_COSIGN_BIN"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err == nil {
		dir := filepath.Join(cache, "bomstream", "cosign", CosignVersion)
		bin := filepath.Join(dir, "cosign")
		if _, err = os.Stat(bin); err == nil {
			return bin
		}
		cmd := exec.Command("go", "install", "github.com/sigstore/cosign/v3/cmd/cosign@"+CosignVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
		var out []byte
		if out, err = cmd.CombinedOutput(); err == nil {
			return bin
		}
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		err = fmt.Errorf("go install cosign@%s: %w\n%s", CosignVersion, err, out)
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cosign %s is needed (set BOMSTREAM_COSIGN_BIN or run make cosign): %v", CosignVersion, err)
	}
	t.Skipf("cosign %s not available (set BOMSTREAM_COSIGN_BIN or run make cosign): %v", CosignVersion, err)
	return ""
}

// Run runs bin (cosign, or bomstream) in dir with a HOME of its own (cosign's
// TUF cache and configuration stay out of the user's), an empty key
// password and no prompts, and returns its stdout; it fails t with the
// tails of both outputs when the command fails.
func Run(t testing.TB, dir, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "COSIGN_PASSWORD=", "COSIGN_YES=true", "SIGSTORE_NO_CACHE=true")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, tailOf(out.String(), 2000), tailOf(errb.String(), 4000))
	}
	return out.String()
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
