package web_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests run the real pipeline: the bomstream binary, built once per
// test process from this module, runs `run --manifests DIR --once` over
// the project's corpus, and `web` serves what it stored.

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	if corpusDir != "" {
		_ = os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

// bomstream is the binary, built from ../../cmd/bomstream (or the one
// BOMSTREAM_BIN names).
func bomstream(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("BOMSTREAM_BIN"); bin != "" {
		return bin
	}
	binOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if binDir, binErr = os.MkdirTemp("", "bomstream-web-bin"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "bomstream")
		if out, err := exec.Command(gobin, "build", "-o", binPath, "github.com/bomstream/bomstream/cmd/bomstream").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build bomstream: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// runOnce runs one pass of the pipeline in dir (its ./bomstream-data),
// with env added to the environment.
func runOnce(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bomstream(t), append([]string{"run", "--once", "--log-level", "warn"}, args...)...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bomstream run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var listening = regexp.MustCompile(`inventory api listening.*"addr": ?"([^"]+)"`)

// serveWeb starts `bomstream web` in dir and returns its address; it is
// stopped when the test ends.
func serveWeb(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bomstream(t), append([]string{"web", "--log-level", "info"}, args...)...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	var logged strings.Builder
	var mu sync.Mutex
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logged.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	select {
	case a := <-addr:
		return a
	case <-exited:
	case <-time.After(2 * time.Minute):
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("bomstream web did not start listening:\n%s", logged.String())
	return ""
}

// copyFiles copies the *.yaml files of src into dst.
func copyFiles(t testing.TB, src, dst string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return len(files)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fetch GETs u and reads the answer.
func fetch(t testing.TB, u string) (code int, body string, header http.Header) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// waitFindings waits until the pages at base have read FINDINGS (they say
// so while they read it).
func waitFindings(t testing.TB, base string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, body, _ := fetch(t, base+"/findings")
		if !strings.Contains(body, "still being read") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the pages did not read FINDINGS within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
