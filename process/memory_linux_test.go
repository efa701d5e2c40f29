//go:build linux

package process

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// releaseStartupPages, run in a child process so that no other test touches
// its pages meanwhile: it advises away the executable's mappings, and the
// process goes on running code and reading its data as before. How many
// pages the kernel then reclaims is the kernel's business: the resident
// figures are logged, not asserted.
func TestReleaseStartupPages(t *testing.T) {
	if os.Getenv("BOMSTREAM_TEST_RELEASE_CHILD") == "1" {
		before := residentShared()
		n, err := releaseStartupPages()
		after := residentShared()
		if err != nil {
			fmt.Printf("error %v\n", err)
			return
		}
		// Code and read-only data are still there: parse and validate a
		// configuration, which walks the defaults and the sink registry.
		cfg := defaultConfig()
		fmt.Printf("released %d bytes, resident shared %.1f -> %.1f MiB, cluster %q, validate: %v\n",
			n, before, after, cfg.Cluster, cfg.Validate(nil))
		releaseMemory(zap.NewNop(), true) // and again, through the collector's hook
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReleaseStartupPages$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BOMSTREAM_TEST_RELEASE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	line := ""
	for l := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(l, "released ") || strings.HasPrefix(l, "error ") {
			line = l
		}
	}
	var (
		n             int
		before, after float64
		cluster, rest string
	)
	if _, err := fmt.Sscanf(line, "released %d bytes, resident shared %f -> %f MiB, cluster %s validate: %s", &n, &before, &after, &cluster, &rest); err != nil {
		t.Fatalf("child said %q (%v); all of it:\n%s", line, err, out)
	}
	t.Logf("%s", line)
	if n <= 0 {
		t.Errorf("released %d bytes of mappings, want the executable's", n)
	}
	t.Logf("resident shared %.1f -> %.1f MiB", before, after)
	if want := fmt.Sprintf("%q,", defaultConfig().Cluster); cluster != want {
		t.Errorf("the child read cluster %s after the release, want %s", cluster, want)
	}
}

func TestReadOnlyMapping(t *testing.T) {
	const exe = "/usr/local/bin/bomstream"
	for _, c := range []struct {
		line       string
		start, end uintptr
		ok         bool
	}{
		{"00400000-02a04000 r-xp 00000000 fe:00 9986492   /usr/local/bin/bomstream", 0x400000, 0x2a04000, true},
		{"02a04000-056c6000 r--p 02604000 fe:00 9986492   /usr/local/bin/bomstream", 0, 0, false}, // read-only data: left alone
		{"056c6000-057cf000 rw-p 052c6000 fe:00 9986492   /usr/local/bin/bomstream", 0, 0, false}, // data: written
		{"7f32e6736000-7f32e688c000 r-xp 00028000 fe:00 123 /usr/lib/x86_64-linux-gnu/libc.so.6", 0, 0, false},
		{"7ffd1000-7ffd2000 r--p 00000000 00:00 0 [vvar]", 0, 0, false},
		{"c000000000-c004000000 rw-p 00000000 00:00 0", 0, 0, false},
		{"00400000-02a04000 ---p 00000000 fe:00 9986492   /usr/local/bin/bomstream", 0, 0, false},
		{"02a04000-00400000 r--p 00000000 fe:00 9986492   /usr/local/bin/bomstream", 0, 0, false}, // end before start
		{"zz-02a04000 r--p 00000000 fe:00 9986492   /usr/local/bin/bomstream", 0, 0, false},
		{"", 0, 0, false},
	} {
		s, e, ok := readOnlyMapping(c.line, exe)
		if s != c.start || e != c.end || ok != c.ok {
			t.Errorf("%q: %x-%x %v, want %x-%x %v", c.line, s, e, ok, c.start, c.end, c.ok)
		}
	}
	// A path with spaces, as /proc/self/exe shows a replaced binary.
	if _, _, ok := readOnlyMapping("00400000-02a04000 r-xp 00000000 fe:00 1 /opt/bomstream (deleted)", "/opt/bomstream (deleted)"); !ok {
		t.Error("a path with a space is not matched")
	}
}

// residentShared is this process's resident file-backed and shared memory
// in MiB (/proc/self/statm's third field).
func residentShared() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[2], 64)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}
