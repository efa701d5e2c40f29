//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// specialFiles fills dir with a serving workload, a named pipe and a symlink
// to /dev/zero, both named like manifests, and returns their paths.
func specialFiles(t *testing.T, dir string) (fifo, zero string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "chat.yaml"), servingVLLM)
	fifo = filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	zero = filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	return fifo, zero
}

// A named pipe and a symlink to /dev/zero in the manifest directory are
// skipped with a note naming each, at once: neither is opened for reading.
// The workload beside them still gets its BOM.
func TestRenderSkipsPipesAndDevices(t *testing.T) {
	for _, which := range []string{"pipe", "device"} {
		t.Run(which, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "chat.yaml"), servingVLLM)
			var path, reason string
			switch which {
			case "pipe":
				path, reason = filepath.Join(dir, "pipe.yaml"), "named pipe"
				if err := syscall.Mkfifo(path, 0o644); err != nil {
					t.Fatalf("mkfifo: %v", err)
				}
			case "device":
				path, reason = filepath.Join(dir, "zero.yaml"), "device"
				if err := os.Symlink("/dev/zero", path); err != nil {
					t.Fatal(err)
				}
			}
			c := newCLI(t)
			start := time.Now()
			r := guarded(t, time.Second, "render -f "+dir, func() result { return c.run("render", "-f", dir) })
			t.Logf("render took %s", time.Since(start))
			if r.err != nil {
				t.Fatalf("render: %v\n%s", r.err, r.stderr)
			}
			mustContain(t, "render's stderr", r.stderr, "skipped: "+path+": ", reason, "1 workloads, 1 BOMs")
			mustContain(t, "render's stdout", r.stdout, "Qwen/Qwen3-0.6B")
		})
	}
}

// The same through the whole pipeline: `run --once` skips both with a
// warning naming each, exports the one BOM and exits 0.
func TestRunOnceSkipsPipesAndDevices(t *testing.T) {
	dir := t.TempDir()
	manifests, sink := filepath.Join(dir, "m"), filepath.Join(dir, "boms")
	fifo, zero := specialFiles(t, manifests)
	c := newCLI(t)
	r := guarded(t, 10*time.Second, "run --once", func() result {
		return c.run("run", "--manifests", manifests, "--once", "--data-dir", filepath.Join(dir, "data"), "--sink-dir", sink)
	})
	if r.err != nil {
		t.Fatalf("run --once: %v\n%s\n%s", r.err, r.stdout, tail(r.stderr, 4000))
	}
	mustContain(t, "run's log", r.stderr, fifo, "named pipe", zero, "device")
	mustContain(t, "run summary", r.stdout, "1 workloads read", "sink file: 1 exported")
	if n := countBOMFiles(t, sink); n != 1 {
		t.Errorf("sink holds %d BOMs, want 1", n)
	}
}
