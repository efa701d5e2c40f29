// Package streamtest runs a real, external nats-server for tests that must
// reach JetStream over TCP the way a scale-out deployment does.
//
// StartExternal builds the nats-server binary from the module version pinned in
// go.mod (or uses the one named by BOMSTREAM_NATS_SERVER_BIN), starts it with
// JetStream and a store in a temporary directory on a random loopback port, and
// stops it when the test ends. A failed build fails the test: CI must never
// mistake a missing server for a passing suite. StartCluster runs several
// such processes as one JetStream cluster, for tests that stop a server the
// way an operator or a failing machine does.
package streamtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EnvServerBin names a prebuilt nats-server binary to use instead of building one.
const EnvServerBin = "BOMSTREAM_NATS_SERVER_BIN"

// serverPackage is the main package of nats-server, resolved through go.mod.
const serverPackage = "github.com/nats-io/nats-server/v2"

// Server is a running external nats-server.
type Server struct {
	// URL is its client URL, "nats://127.0.0.1:<port>".
	URL string
	// StoreDir is its JetStream store.
	StoreDir string
}

// StartExternal starts a nats-server with JetStream and returns its client URL.
// args are appended to the command line (e.g. "--user", "u", "--pass", "p").
func StartExternal(t testing.TB, args ...string) string {
	t.Helper()
	return Start(t, args...).URL
}

// Start is StartExternal returning the server's details.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := ServerBinary(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "js")
	portsDir := filepath.Join(dir, "ports")
	if err := os.Mkdir(portsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmdArgs := append([]string{"-js", "-sd", store, "-a", "127.0.0.1", "-p", "-1", "--ports_file_dir", portsDir}, args...)
	cmd := exec.Command(bin, cmdArgs...)
	var logs SyncBuffer
	cmd.Stdout = &logs
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("nats-server output:\n%s", logs.String())
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	var url string
	for url == "" {
		select {
		case err := <-exited:
			t.Fatalf("nats-server exited before it was ready: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server wrote no ports file within 60s\n%s", logs.String())
		}
		url = readPorts(portsDir)
		if url == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return &Server{URL: url, StoreDir: store}
}

// readPorts returns the first client URL of the ports file nats-server writes
// once it listens, or "" when there is none yet.
func readPorts(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".ports") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var p struct {
			Nats []string `json:"nats"`
		}
		if json.Unmarshal(b, &p) == nil && len(p.Nats) > 0 {
			return p.Nats[0]
		}
	}
	return ""
}

// ServerBinary returns the path of a nats-server binary: $BOMSTREAM_NATS_SERVER_BIN
// when set, otherwise one built with `go build` from the module in go.mod into
// a temporary directory (the Go build cache makes repeated builds cheap).
func ServerBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvServerBin); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s: %v", EnvServerBin, err)
		}
		return bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "nats-server")
	cmd := exec.Command(gobin, "build", "-o", out, serverPackage)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nats-server (%s build -o %s %s): %v\n%s", gobin, out, serverPackage, err, b)
	}
	return out
}

// Connect is a JetStream client of the server at url, closed when t ends.
func Connect(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream at %s: %v", url, err)
	}
	return js
}

// WaitJetStream connects to url with opts and waits until JetStream answers.
func WaitJetStream(t testing.TB, url string, opts ...nats.Option) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			_, err = nc.Request("$JS.API.INFO", nil, 5*time.Second)
			nc.Close()
			if err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jetstream at %s not ready within 60s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
