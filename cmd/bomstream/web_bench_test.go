package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/inventory/web"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// webPages are the pages BenchmarkWeb asks for.
var webPages = []struct{ name, path string }{
	{"inventory", "/"},
	{"by-change", "/?sort=-changed"},
	{"page-500", "/?page=500"},
	{"vllm-range", "/?runtime=vllm%3C0.8.5"},
	{"model", "/?model=org-7%2Fmodel-7"},
	{"workload", "/workloads/default/ns-03/Deployment/w-000003"},
	{"fleet", "/fleet"},
	{"findings", "/findings"},
	{"findings-rule", "/findings?rule=runtime-version&page=20"},
	{"api-findings", "/api/v1/findings?limit=100&page=1000"},
}

// BenchmarkWeb serves the web inventory of BOMSTREAM_BENCH_WEB_N (default
// 100,000) generated workloads, pushed through the real pipeline (`run
// --manifests --once` of the built binary), from an index loaded in this
// process, over loopback HTTP. For each page of webPages, over
// BOMSTREAM_BENCH_ROUNDS rounds (default 3) of 10 requests each, the
// figures are medians:
//
//	findings-load-s reading FINDINGS into the pages' findings index, in the
//	            background from the start (pages count no finding until then)
//	findings-index-MiB the heap it holds (after GC)
//	PAGE-first-ms the first request of the page, the index loaded (the fleet
//	            page's figures are kept for later requests)
//	PAGE-ms     wall time of one request, client to last byte (goal for the
//	            inventory's first page: < 300 ms)
//	PAGE-cpu-ms CPU time of the whole process per request (getrusage)
//	PAGE-KB     size of the page's HTML (goal for an inventory page: < 200 KB)
//
//	BOMSTREAM_BENCH_WEB_N=100000 go test ./cmd/bomstream/ -run '^$' -bench BenchmarkWeb -benchtime 1x -timeout 30m
func BenchmarkWeb(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_WEB_N", 100000)
	rounds := benchEnvInt(b, "BOMSTREAM_BENCH_ROUNDS", 3)
	data := fleetData(b, n)
	ctx, cancel := context.WithCancel(context.Background())
	bus, err := stream.Open(ctx, stream.Config{DataDir: data}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	defer cancel() // the pages stop following FINDINGS before the bus closes
	ix := inventory.New()
	if _, err := ix.Load(ctx, bus.Reader()); err != nil {
		b.Fatal(err)
	}
	if got := ix.Stats().Workloads; got != n {
		b.Fatalf("index holds %d workloads, want %d", got, n)
	}
	srv, err := api.New(api.Config{}, ix, bus.Reader())
	if err != nil {
		b.Fatal(err)
	}
	// As startAPI does: one findings index for the pages and the API.
	heap := heapAfterGC()
	start := time.Now()
	fix := stored.NewIndex()
	go follow.New(bus.Reader(), schemas.StreamFindings, fix).Run(ctx, func(err error) { b.Error(err) })
	srv.Handle("GET /api/v1/findings", stored.Handler(bus.Reader(), fix))
	if _, err := web.Register(ctx, srv, web.Sources{Index: ix, Store: bus.Reader(), Findings: fix}, nil); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); !fix.Loaded(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("FINDINGS not read within 5 minutes")
		}
	}
	findingsLoad := time.Since(start)
	findingsMiB := float64(heapAfterGC()-heap) / (1 << 20)
	held := findingsHeld(b, srv)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	get := func(path string) int {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v %.200s", path, resp.StatusCode, err, body)
		}
		return len(body)
	}
	figures := map[string][]float64{}
	add := func(name string, v float64) { figures[name] = append(figures[name], v) }
	for _, p := range webPages {
		// The first request of a page fills what later ones reuse (the
		// fleet's figures).
		start := time.Now()
		get(p.path)
		add(p.name+"-first-ms", float64(time.Since(start).Microseconds())/1000)
	}
	b.ResetTimer()
	for range b.N * rounds {
		for _, p := range webPages {
			var walls []float64
			size := 0
			cpu0 := cpuTime(b)
			for range 10 {
				start := time.Now()
				size = get(p.path)
				walls = append(walls, float64(time.Since(start).Microseconds())/1000)
			}
			add(p.name+"-ms", median(walls))
			add(p.name+"-cpu-ms", float64((cpuTime(b)-cpu0).Microseconds())/1000/10)
			add(p.name+"-KB", float64(size)/1000)
		}
	}
	for name, xs := range figures {
		b.ReportMetric(median(xs), name)
	}
	b.ReportMetric(findingsLoad.Seconds(), "findings-load-s")
	b.ReportMetric(findingsMiB, "findings-index-MiB")
	b.ReportMetric(float64(held), "findings")
	b.ReportMetric(0, "ns/op")
}

var findingsOf = regexp.MustCompile(`Findings 1–[0-9]+ of ([0-9]+)`)

// findingsHeld is the number of findings, open and resolved, the pages
// list.
func findingsHeld(b *testing.B, srv *api.Server) int {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/findings?state=all", nil)
	req.RemoteAddr = "127.0.0.1:1"
	srv.Handler().ServeHTTP(rec, req)
	m := findingsOf.FindStringSubmatch(rec.Body.String())
	if m == nil {
		b.Fatalf("the findings page counts nothing: %.300s", rec.Body.String())
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
