package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
//	off-cpu-us/workload  run --once with `findings: {disabled: true}`, in
//	                     the same round (before the default run in every
//	                     other round, after it in the others)
//	findings-cpu-ratio   the default run's CPU over that run's, the
//	                     median of the rounds' ratios: what the findings
//	                     stage costs end to end (goal, issue 30: <= 1.15)
//
// BOMSTREAM_BENCH_COMPARE names another bomstream binary (an earlier
// build) to time in the same rounds, interleaved: its figures come with the
// prefix "compare-".
//
// Goal (issue "One message type ... 3,500 workloads/s end to end"):
// >= 3,500 workloads/s and <= 450 µs of CPU per workload for run --once.
func BenchmarkRunOnce(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_E2E_N", 10000)
	rounds := benchEnvInt(b, "BOMSTREAM_BENCH_ROUNDS", 3)
	bins := map[string]string{"": bomstreamBinary(b)}
	if other := os.Getenv("BOMSTREAM_BENCH_COMPARE"); other != "" {
		bins["compare-"] = other // another build, timed in the same rounds
	}
	tree := filepath.Join(benchTempDir(b), "manifests")
	writeSynthetic(b, tree, n)
	off := filepath.Join(filepath.Dir(tree), "findings-off.yaml")
	writeFile(b, off, "findings: {disabled: true}\n")
	b.StopTimer()
	// Nothing is deleted before the end: freshly freed inodes make the file
	// system slow to create the next ones, which would tax later rounds.
	figures := map[string][]float64{}
	add := func(name string, v float64) { figures[name] = append(figures[name], v) }
	for round := range b.N * rounds {
		for prefix, bin := range bins {
			dir := benchTempDir(b)
			once := func(name string, extra ...string) (wall, used time.Duration) {
				args := append([]string{"run", "--manifests", tree, "--once",
					"--data-dir", filepath.Join(dir, "data"+name), "--sink-dir", filepath.Join(dir, "boms"+name)}, extra...)
				wall, used = timeProcess(b, bin, args...)
				if got := countFiles(b, filepath.Join(dir, "boms"+name), "latest.cdx.json"); got != n {
					b.Fatalf("%srun --once %v exported %d latest BOMs, want %d", prefix, extra, got, n)
				}
				return wall, used
			}
			// The findings-off run goes first in every other round.
			var wall, used, offUsed time.Duration
			if round%2 == 1 {
				_, offUsed = once("-off", "--config", off)
			}
			wall, used = once("")
			if round%2 == 0 {
				_, offUsed = once("-off", "--config", off)
			}
			rwall, rused := timeProcess(b, bin, "render", "-f", tree, "-o", filepath.Join(dir, "rendered"))
			rate, rrate := float64(n)/wall.Seconds(), float64(n)/rwall.Seconds()
			add(prefix+"workloads/s", rate)
			add(prefix+"cpu-us/workload", float64(used.Microseconds())/float64(n))
			add(prefix+"render-workloads/s", rrate)
			add(prefix+"render-cpu-us/workload", float64(rused.Microseconds())/float64(n))
			add(prefix+"ratio", rate/rrate)
			add(prefix+"off-cpu-us/workload", float64(offUsed.Microseconds())/float64(n))
			add(prefix+"findings-cpu-ratio", float64(used)/float64(offUsed))
			// On standard error: the testing package keeps ten lines of a
			// benchmark's log.
			fmt.Fprintf(os.Stderr, "round %d %s: run --once %.0f µs CPU/workload, findings off %.0f (ratio %.3f); %.2f of render -f's rate\n",
				round+1, cmp.Or(strings.TrimSuffix(prefix, "-"), "this build"), float64(used.Microseconds())/float64(n),
				float64(offUsed.Microseconds())/float64(n), float64(used)/float64(offUsed), rate/rrate)
		}
	}
	for name, xs := range figures {
		b.ReportMetric(median(xs), name)
	}
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
