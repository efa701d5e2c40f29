package main

// Transient failures heal by themselves (issue "The store survives its
// users"): a sink whose directory turns read-only, or fills up, retries
// without a limit while it says it is degraded, and catches up with nothing
// missing once the cause is gone; nothing goes to the dead-letter stream.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallFS mounts a tmpfs of size at dir (root with CAP_SYS_ADMIN, as in CI)
// and returns a function that remounts it with other options, e.g. "ro",
// "rw", "size=64m". The test fails when the mount is not possible: it never
// passes by skipping what it tests.
func smallFS(t *testing.T, dir, size string) func(opts string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs at %s (this test needs root with CAP_SYS_ADMIN): %v: %s", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return func(opts string) {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
			t.Fatalf("remount %s %s: %v: %s", dir, opts, err, out)
		}
	}
}

func TestSinkHealsAfterReadOnlyAndFullDisk(t *testing.T) {
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	dir := t.TempDir()
	sinkDir, data := filepath.Join(dir, "boms"), filepath.Join(dir, "data")
	remount := smallFS(t, sinkDir, "64m")
	c := newCLI(t)
	c.httpAddr = make(chan string, 1)
	stop := startRun(t, c, "--manifests", tree, "--interval", "100ms", "--data-dir", data, "--sink-dir", sinkDir, "--http-listen", "127.0.0.1:0")
	base := "http://" + <-c.httpAddr
	want := serving(expect(t, tree, "default"))
	eventually(t, "the first BOMs", func() bool { return countBOMFiles(t, sinkDir) == len(want) })

	ballast := filepath.Join(sinkDir, "ballast")
	fill := func() { // every byte taken: writes fail with ENOSPC
		f, err := os.Create(ballast)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		for {
			if _, err := f.Write(buf); err != nil {
				return
			}
		}
	}
	tag := "v0.10.1"
	for _, fault := range []struct {
		name    string
		on, off func()
		tag     string
	}{
		{"read-only", func() { remount("ro") }, func() { remount("rw") }, "v0.10.2"},
		{"full", fill, func() { _ = os.Remove(ballast) }, "v0.10.3"},
	} {
		fault.on()
		replaceIn(t, filepath.Join(tree, "vllm-deployment.yaml"), "vllm/vllm-openai:"+tag, "vllm/vllm-openai:"+fault.tag)
		tag = fault.tag
		edited := serving(expect(t, tree, "default"))["ml/Deployment/chat"]
		eventually(t, fault.name+": /readyz names the degraded sink", func() bool {
			code, body := httpGet(t, base+"/readyz")
			return code == 503 && strings.Contains(body, "sink file: degraded")
		})
		eventually(t, fault.name+": bomstream_sink_up 0", func() bool {
			_, metrics := httpGet(t, base+"/metrics")
			return strings.Contains(metrics, `bomstream_sink_up{sink="file"} 0`)
		})
		fault.off()
		eventually(t, fault.name+": the sink caught up by itself", func() bool {
			_, err := os.Stat(filepath.Join(sinkDir, bomFilePath(edited.Workload, edited.BomHash)))
			return err == nil
		})
		eventually(t, fault.name+": /readyz 200 again", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == 200 })
	}
	if r := stop(); r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	// Nothing was dead-lettered, and every version is there.
	r := c.mustRun("dlq", "list", "--data-dir", data)
	mustContain(t, "dlq list", r.stdout, "0 dead letters")
	if got := countBOMFiles(t, sinkDir); got != len(want)+2 {
		t.Fatalf("%d BOM files, want %d (each serving workload, and the two edits)", got, len(want)+2)
	}
}
