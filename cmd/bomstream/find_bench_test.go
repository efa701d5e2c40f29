package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/stream"
)

// fleetDeployment is one generated workload; fleetServing the four ways
// it serves, by i%4: vLLM declared (some pinned by revision, some images
// pinned by digest), SGLang declared, TGI only inferred from its image.
const fleetDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w-%06d
  namespace: ns-%02d
spec:
  template:
    spec:
      containers:
      - name: main
        image: %s
%s
`

func fleetServing(i int) (image, rest string) {
	switch i % 4 {
	case 0, 3:
		image = fmt.Sprintf("vllm/vllm-openai:v0.%d.%d", 6+i%5, i%7)
		if i%100 == 3 {
			image = fmt.Sprintf("vllm/vllm-openai@sha256:%064x", i%17)
		}
		args := fmt.Sprintf(`["org-%d/model-%d"]`, i%50, i%1000)
		if i%4 == 3 {
			args = fmt.Sprintf(`["org-%d/model-%d", "--revision", "%040x"]`, i%50, i%1000, i)
		}
		return image, `        command: ["vllm", "serve"]
        args: ` + args
	case 1:
		return fmt.Sprintf("lmsysorg/sglang:v0.%d.%d.post1-cu124", 3+i%3, i%9), fmt.Sprintf(`        command: ["python3", "-m", "sglang.launch_server"]
        args: ["--model-path", "Qwen/Qwen2.5-%dB"]`, i%72)
	}
	return fmt.Sprintf("ghcr.io/huggingface/text-generation-inference:%d.%d.0", 2+i%2, i%5), fmt.Sprintf(`        env:
        - name: MODEL_ID
          value: meta-llama/Llama-3.1-%dB`, 8+i%3*31)
}

func writeFleet(b *testing.B, dir string, n int) {
	var sb strings.Builder
	for i := range n {
		image, rest := fleetServing(i)
		fmt.Fprintf(&sb, fleetDeployment, i, i%100, image, rest)
		if i%500 == 499 || i == n-1 {
			writeFile(b, filepath.Join(dir, fmt.Sprintf("fleet-%04d.yaml", i/500)), sb.String())
			sb.Reset()
		}
	}
}

// findQueries are ten representative questions.
var findQueries = []map[string][]string{
	{"runtime": {"vllm<0.8.5"}},
	{"runtime": {"sglang>=0.4,<0.5"}},
	{"model": {"org-7/model-7"}},
	{"model": {"meta-llama/*70B*"}},
	{"digest": {fmt.Sprintf("sha256:%064x", 5)}},
	{"image": {"vllm/vllm-openai:v0.8.4"}},
	{"namespace": {"ns-42"}, "kind": {"Deployment"}},
	{"unpinned": {"true"}, "runtime": {"vllm"}},
	{"inferred-only": {"true"}, "cluster": {"default"}},
	{"changed-since": {"24h"}},
}

// BenchmarkFind loads the inventory of BOMSTREAM_BENCH_FIND_N (default
// 100,000) generated workloads, pushed through the real pipeline (`run
// --manifests --once` of the built binary), and asks it ten questions.
// Each of BOMSTREAM_BENCH_ROUNDS rounds (default 3) loads a fresh index
// from the data directory; the figures are medians over rounds:
//
//	load-s        loading the index from BOMS (goal: < 5 s)
//	index-MiB     heap the loaded index holds (after GC, before and after)
//	q1-ms..q10-ms each query of findQueries, the median of 5 runs (goal: < 200 ms)
//	q1-hits...    workloads each query selects
//
//	BOMSTREAM_BENCH_FIND_N=100000 go test ./cmd/bomstream/ -run '^$' -bench BenchmarkFind -benchtime 1x -timeout 30m
func BenchmarkFind(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_FIND_N", 100000)
	rounds := benchEnvInt(b, "BOMSTREAM_BENCH_ROUNDS", 3)
	data := fleetData(b, n)
	ctx := context.Background()
	bus, err := stream.Open(ctx, stream.Config{DataDir: data}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	figures := map[string][]float64{}
	add := func(name string, v float64) { figures[name] = append(figures[name], v) }
	b.ResetTimer()
	for range b.N * rounds {
		before := heapAfterGC()
		ix := inventory.New()
		start := time.Now()
		if _, err := ix.Load(ctx, bus.Reader()); err != nil {
			b.Fatal(err)
		}
		add("load-s", time.Since(start).Seconds())
		if got := ix.Stats().Workloads; got != n {
			b.Fatalf("index holds %d workloads, want %d", got, n)
		}
		add("index-MiB", float64(heapAfterGC()-before)/(1<<20))
		for qi, fields := range findQueries {
			q, err := inventory.ParseQuery(fields, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			var times []float64
			hits := 0
			for range 5 {
				start := time.Now()
				hits = len(ix.Find(q))
				times = append(times, float64(time.Since(start).Microseconds())/1000)
			}
			add(fmt.Sprintf("q%d-ms", qi+1), median(times))
			add(fmt.Sprintf("q%d-hits", qi+1), float64(hits))
		}
		runtime.KeepAlive(ix)
	}
	for name, xs := range figures {
		b.ReportMetric(median(xs), name)
	}
	b.ReportMetric(0, "ns/op")
}

// fleetData pushes n generated workloads (writeFleet) through the real
// pipeline, `run --manifests --once` of the built binary, and returns its
// data directory.
func fleetData(b *testing.B, n int) string {
	dir := benchTempDir(b)
	tree, data := filepath.Join(dir, "manifests"), filepath.Join(dir, "data")
	writeFleet(b, tree, n)
	wall, _ := timeProcess(b, bomstreamBinary(b), "run", "--manifests", tree, "--once", "--data-dir", data, "--sink-dir", filepath.Join(dir, "boms"))
	fmt.Fprintf(os.Stderr, "pipeline: %d workloads in %s\n", n, wall.Round(time.Millisecond))
	_ = os.RemoveAll(filepath.Join(dir, "boms"))
	return data
}

// heapAfterGC is the live heap after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
