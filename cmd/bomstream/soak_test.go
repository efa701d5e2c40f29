//go:build soak

package main

// The soak test of issue "The store survives its users" (not part of CI:
// `make soak`): BOMSTREAM_SOAK_DURATION (default 30m) of continuous changes,
// the process killed with SIGKILL every 20-60 s and started again, and the
// history sink's directory made read-only now and then; at the end every
// change is exported once in effect, none lost, none out of order in the
// latest-only sink, and `bomstream check` reports a clean store.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSoak(t *testing.T) {
	d := 30 * time.Minute
	if v := os.Getenv("BOMSTREAM_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("BOMSTREAM_SOAK_DURATION: %v", err)
		}
	}
	bin := bomstreamBinary(t)
	const workloads = 300
	dir := t.TempDir()
	tree, data, hist := filepath.Join(dir, "m"), filepath.Join(dir, "data"), filepath.Join(dir, "history")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	remount := smallFS(t, hist, "2g")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: history, type: file, config: {dir: %q}, runner: {baseBackoff: 100ms, maxBackoff: 2s}}
- {name: latest, type: stdout, runner: {latestOnly: true}}
`, hist))
	outFile, errFile, outPath, errPath := processLogs(t, dir)
	args := []string{"run", "--config", conf, "--manifests", tree, "--interval", "200ms", "--data-dir", data}

	writeRound(t, tree, workloads, 0)
	proc := startProcess(t, bin, outFile, errFile, args...)
	end := time.Now().Add(d)
	nextKill := time.Now().Add(time.Duration(20+rand.IntN(41)) * time.Second)
	nextRO := time.Now().Add(time.Duration(30+rand.IntN(90)) * time.Second)
	rounds, kills, readOnly := 0, 0, 0
	for round := 1; time.Now().Before(end); round++ {
		// A change of a random tenth of the workloads, every half second.
		for i := range workloads {
			if rand.IntN(10) == 0 {
				p := filepath.Join(tree, fmt.Sprintf("llm-%03d.yaml", i))
				writeFile(t, p+".tmp", fmt.Sprintf(killManifest, i, round, i))
				if err := os.Rename(p+".tmp", p); err != nil {
					t.Fatal(err)
				}
			}
		}
		rounds++
		time.Sleep(500 * time.Millisecond)
		now := time.Now()
		if now.After(nextKill) {
			proc.kill(t)
			kills++
			fmt.Fprintf(errFile, "\n=== kill -9 #%d\n", kills)
			proc = startProcess(t, bin, outFile, errFile, args...)
			nextKill = now.Add(time.Duration(20+rand.IntN(41)) * time.Second)
		}
		if now.After(nextRO) {
			readOnly++
			remount("ro")
			time.Sleep(time.Duration(5+rand.IntN(20)) * time.Second)
			remount("rw")
			nextRO = time.Now().Add(time.Duration(30+rand.IntN(90)) * time.Second)
		}
	}
	if kills > 0 {
		// The last process is up (it has read the tree) before it is stopped.
		waitSynced(t, errPath, kills)
	}
	drain(t, proc, bin, outFile, errFile, args, 10*time.Minute)
	t.Logf("%s: %d rounds of changes, %d kills, %d read-only periods", d, rounds, kills, readOnly)
	checkAfterKills(t, data, hist, outPath, workloads, 0)
	c := newCLI(t)
	r := c.run("check", "--data-dir", data, "--config", conf)
	if r.err != nil || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("bomstream check at the end: %v\n%s", r.err, r.stdout)
	}
}
