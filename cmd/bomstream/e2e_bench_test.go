package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRunOnce times bomstream as a user runs it: `bomstream run --once`
// over BOMSTREAM_BENCH_E2E_N (default 10,000) workloads of a manifest
// directory into the default durable file sink, as a whole process, and, in
// the same round, `bomstream render -f` of the same manifests into a
// directory (no stream at all). The stores and trees go under
// BOMSTREAM_BENCH_DIR (default the test's temporary directory: the root file
// system here). Each of BOMSTREAM_BENCH_ROUNDS rounds (default 3) starts from
// an empty data directory and sink; the figures are the medians:
//
//	workloads/s          run --once: workloads over the process's wall time
//	cpu-us/workload      run --once: the process's CPU time (getrusage, user
//	                     and system, every thread) per workload
//	render-workloads/s   render -f, the same
//	render-cpu-us/workload
//	ratio                workloads/s over render-workloads/s
//
// Goal (issue "One message type ... 3,500 workloads/s end to end"):
// >= 3,500 workloads/s and <= 450 µs of CPU per workload for run --once.
func BenchmarkRunOnce(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_E2E_N", 10000)
	rounds := benchEnvInt(b, "BOMSTREAM_BENCH_ROUNDS", 3)
	bin := bomstreamBinary(b)
	tree := filepath.Join(benchTempDir(b), "manifests")
	writeSynthetic(b, tree, n)
	b.StopTimer()
	var rate, cpu, rrate, rcpu, ratio []float64
	for range b.N * rounds {
		dir := benchTempDir(b)
		wall, used := timeProcess(b, bin, "run", "--manifests", tree, "--once",
			"--data-dir", filepath.Join(dir, "data"), "--sink-dir", filepath.Join(dir, "boms"))
		if got := countFiles(b, filepath.Join(dir, "boms"), "latest.cdx.json"); got != n {
			b.Fatalf("run --once exported %d latest BOMs, want %d", got, n)
		}
		rwall, rused := timeProcess(b, bin, "render", "-f", tree, "-o", filepath.Join(dir, "rendered"))
		rate, cpu = append(rate, float64(n)/wall.Seconds()), append(cpu, float64(used.Microseconds())/float64(n))
		rrate, rcpu = append(rrate, float64(n)/rwall.Seconds()), append(rcpu, float64(rused.Microseconds())/float64(n))
		ratio = append(ratio, rate[len(rate)-1]/rrate[len(rrate)-1])
		_ = os.RemoveAll(dir)
	}
	b.ReportMetric(median(rate), "workloads/s")
	b.ReportMetric(median(cpu), "cpu-us/workload")
	b.ReportMetric(median(rrate), "render-workloads/s")
	b.ReportMetric(median(rcpu), "render-cpu-us/workload")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(0, "ns/op")
}

// timeProcess runs bin with args to its end and returns its wall time and
// CPU time (user and system, all threads).
func timeProcess(b *testing.B, bin string, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "BOMSTREAM_LOG_LEVEL=warn")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall = time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, tail(string(out), 3000))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage")
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return wall, cpu
}

// countFiles counts the files called name under root.
func countFiles(b *testing.B, root, name string) int {
	b.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == name {
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(fmt.Errorf("count %s under %s: %w", name, root, err))
	}
	return n
}
