package main

// Benchmarks of the whole in-process pipeline (issue "Event backbone"): the
// embedded JetStream server with its file store, collector-side publishing
// with changelog.Log.PublishChange, the transformer stage, and a file sink driven by its
// runner, wired by newPipeline exactly as `bomstream run` wires them.
//
// Full size (100,000 workloads; takes minutes):
//
//	go test -run '^$' -bench 'Pipeline|Latency|Replay' -benchtime 1x -timeout 30m ./cmd/bomstream/
//
// Smaller, e.g. on a laptop:
//
//	BOMSTREAM_BENCH_N=10000 go test -run '^$' -bench 'Pipeline|Latency|Replay' -benchtime 1x -timeout 30m ./cmd/bomstream/
//
// Knobs (environment):
//
//	BOMSTREAM_BENCH_N           workloads of BenchmarkPipeline and BenchmarkReplay (default 100000)
//	BOMSTREAM_BENCH_LATENCY_N   changes BenchmarkLatency sends at 100/s (default 1000, i.e. 10 s)
//	BOMSTREAM_BENCH_PUBLISHERS  concurrent AppendChanges callers in BenchmarkPipeline (default 4)
//	BOMSTREAM_BENCH_ROUNDS      rounds per variant, whose medians are reported (default 3)
//	BOMSTREAM_BENCH_DIR         where the JetStream stores and file-sink trees go (default: the
//	                            test's temporary directory), e.g. /dev/shm to take the disk out
//	BOMSTREAM_BENCH_KEEP        when set, those directories are left in place (their paths are
//	                            printed) instead of removed at the end: see below
//
// Each benchmark runs twice: "durable" is the file sink's default (exports
// group-committed with syncfs), "nofsync" sets the sink's `fsync: false`.
// Goals (issue "Delivery core"): in memory, at most 400 µs of CPU per change
// and 4,500 BOMs/s; on disk, durable, a ratio to raw of at least 0.07;
// change-to-export p99 under 50 ms at 100 changes/s; replay at least 4,000
// BOMs/s in memory.
//
// On disk, mind what ran before. ext4 without a journal (as on these CI
// machines' root file system) does not reuse an inode freed in the last 60 s
// (360 s while its inode table block is dirty): allocating one scans past
// every such inode. A run that starts within minutes of deleting a previous
// run's tree (tens of thousands of inodes) pays for it in every mkdir and
// create: a directory, a file and a link cost 155 µs of CPU instead of 100.
// Take on-disk figures after a few quiet minutes, or run back to back with
// BOMSTREAM_BENCH_KEEP and remove the trees after (slowly: removing a run's
// trees takes minutes, and skews what runs meanwhile).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/streamtest"
	"github.com/bomstream/bomstream/transformer"
)

// benchVariants are the two file-sink settings every benchmark is run with.
var benchVariants = []struct {
	name  string
	fsync bool
}{
	{"durable", true},
	{"nofsync", false},
}

const benchCluster = "bench"

// BenchmarkPipeline publishes BOMSTREAM_BENCH_N changes of distinct
// workloads the way the collector does (AppendChanges, from
// BOMSTREAM_BENCH_PUBLISHERS goroutines) into a running pipeline and stops
// the clock when the file sink has exported the last BOM. Each of
// BOMSTREAM_BENCH_ROUNDS rounds (default 3) first measures, in the same run,
// the raw rate of the same messages on a fresh server (asynchronous publish
// to CHANGES with 1000 acks outstanding, then consume and ack through a
// durable pull consumer), after a warm-up. The reported figures are the
// medians of the rounds:
//
//	msgs/s          pipeline rate, first publish to last export
//	cpu-us/change   CPU time of the whole process (getrusage: the embedded
//	                server, collector, transformer and sink) per change
//	raw-msgs/s      raw publish+consume rate
//	raw-cpu-us/msg  CPU time per raw message
//	ratio           msgs/s over raw-msgs/s
//	retries         retries plus redeliveries the stages absorbed (a fast
//	                figure bought with retries shows here; a dead letter
//	                fails the benchmark)
func BenchmarkPipeline(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_N", 100000)
	publishers := benchEnvInt(b, "BOMSTREAM_BENCH_PUBLISHERS", 4)
	rounds := benchEnvInt(b, "BOMSTREAM_BENCH_ROUNDS", 3)
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) {
			b.StopTimer()
			events := benchEvents(b, "", n)
			benchRawRate(b, benchEvents(b, "warm-", 2000)) // warm-up: code paths, allocator, page cache
			var pipe, pipeCPU, raw, rawCPU, retries []float64
			for range b.N * rounds {
				r, rc := benchRawRate(b, events)
				raw, rawCPU = append(raw, r), append(rawCPU, rc)
				p, pc, re := benchPipelineRate(b, events, publishers, v.fsync)
				pipe, pipeCPU, retries = append(pipe, p), append(pipeCPU, pc), append(retries, re)
			}
			ratios := make([]float64, len(pipe))
			for i := range pipe {
				ratios[i] = pipe[i] / raw[i]
			}
			b.ReportMetric(median(pipe), "msgs/s")
			b.ReportMetric(median(pipeCPU), "cpu-us/change")
			b.ReportMetric(median(raw), "raw-msgs/s")
			b.ReportMetric(median(rawCPU), "raw-cpu-us/msg")
			b.ReportMetric(median(ratios), "ratio")
			b.ReportMetric(median(retries), "retries")
			b.ReportMetric(0, "ns/op") // one op is a whole run: msgs/s says it better
		})
	}
}

// median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// cpuTime is the CPU time (user plus system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPipelineRate runs one pipeline over events and returns its rate, CPU
// microseconds per change, and the retries it absorbed.
func benchPipelineRate(b *testing.B, events []schemas.WorkloadChange, publishers int, fsync bool) (rate, cpuPerChange, retries float64) {
	bp := benchStartPipeline(b, fsync, len(events))
	defer bp.stop(b)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	b.StartTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	per := (len(events) + publishers - 1) / publishers
	changes := changelog.New(bp.p.Bus())
	for p := range publishers {
		lo, hi := min(p*per, len(events)), min((p+1)*per, len(events))
		wg.Go(func() {
			const batch = 1000
			for i := lo; i < hi; i += batch {
				var appends []changelog.Append
				for _, ev := range events[i:min(i+batch, hi)] {
					appends = append(appends, changelog.Append{Event: ev})
				}
				for j, r := range changes.AppendChanges(ctx, appends) {
					if r.Err != nil || !r.Published {
						errs <- fmt.Errorf("publish change %d: published=%v: %w", i+j, r.Published, r.Err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	bp.rec.wait(b, ctx)
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	return float64(len(events)) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(len(events)), bp.retries(b)
}

// benchRawRate publishes the events' JSON to CHANGES of a fresh embedded
// server, asynchronously with up to 1000 acks outstanding, then consumes and
// acks them through a durable pull consumer. It returns messages per second
// from the first publish to the last ack, and CPU microseconds per message.
func benchRawRate(b *testing.B, events []schemas.WorkloadChange) (float64, float64) {
	msgs := make([]*nats.Msg, len(events))
	for i, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(schemas.ChangesSubject(ev.Data.Workload))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, schemas.ChangeMsgID(ev.Data.Workload, 0))
		msgs[i] = m
	}
	bus, err := stream.Open(context.Background(), stream.Config{DataDir: filepath.Join(benchTempDir(b), "raw")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, js := bus.Raw()
	cons, err := js.CreateOrUpdateConsumer(ctx, schemas.StreamChanges, jetstream.ConsumerConfig{
		Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000,
	})
	if err != nil {
		b.Fatal(err)
	}

	b.StartTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	if err := streamtest.PublishConsume(ctx, js, cons, msgs); err != nil {
		b.Fatal(err)
	}
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	return float64(len(msgs)) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(len(msgs))
}

// BenchmarkLatency sends BOMSTREAM_BENCH_LATENCY_N changes of distinct
// workloads at 100 per second, each from its own goroutine at its scheduled
// time (an open loop: a slow change does not delay the next), into a running
// pipeline, and measures for each the time from just before PublishChange to
// the return of the sink's Export. Metrics: p50-ms, p99-ms, max-ms; goal p99
// under 50 ms.
func BenchmarkLatency(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_LATENCY_N", 1000)
	const rate = 100 // changes per second
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) {
			b.StopTimer()
			warm := benchEvents(b, "warm-", 20)
			events := benchEvents(b, "lat-", n)
			var lat []time.Duration
			for range b.N {
				bp := benchStartPipeline(b, v.fsync, len(warm)+len(events))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				changes := changelog.New(bp.p.Bus())
				// Warm up: consumers created, first files and directories made.
				for _, ev := range warm {
					if _, _, err := changes.PublishChange(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				bp.rec.waitFor(b, ctx, len(warm))

				b.StartTimer()
				sent := make([]time.Time, len(events))
				var wg sync.WaitGroup
				errs := make(chan error, len(events))
				begin := time.Now()
				for i := range events {
					time.Sleep(time.Until(begin.Add(time.Duration(i) * time.Second / rate)))
					wg.Go(func() {
						sent[i] = time.Now()
						if _, _, err := changes.PublishChange(ctx, events[i]); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				bp.rec.wait(b, ctx)
				b.StopTimer()
				for i, ev := range events {
					lat = append(lat, bp.rec.exportedAt(b, ev.Data.Workload.UID).Sub(sent[i]))
				}
				cancel()
				bp.stop(b)
			}
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (len(sorted)*p + 99) / 100
	return sorted[max(rank, 1)-1]
}

// BenchmarkReplay fills BOMS with BOMSTREAM_BENCH_N BOMs of distinct
// workloads (rendered by the real renderer, published with the transformer's
// headers and dedupe ids), then times runner.Replay of the whole stream into
// an empty file sink with a new ledger. Metric: msgs/s.
func BenchmarkReplay(b *testing.B) {
	n := benchEnvInt(b, "BOMSTREAM_BENCH_N", 100000)
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) {
			b.StopTimer()
			dir := benchTempDir(b)
			bus, err := stream.Open(context.Background(), stream.Config{DataDir: filepath.Join(dir, "data")}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer bus.Close()
			benchFillBOMs(b, bus, benchEvents(b, "", n))
			log := benchLogger()
			var rates, cpus []float64
			for i := range b.N * benchEnvInt(b, "BOMSTREAM_BENCH_ROUNDS", 3) {
				s, err := file.New(file.Config{Name: "replay" + strconv.Itoa(i), Dir: filepath.Join(dir, "boms"+strconv.Itoa(i)), Fsync: new(v.fsync)}, log)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
				b.StartTimer()
				start, cpu0 := time.Now(), cpuTime(b)
				r, err := runner.New(bus, s, runner.Config{}, false, log, nil)
				if err != nil {
					b.Fatal(err)
				}
				st, err := r.Replay(ctx, runner.ReplayOptions{}, nil)
				elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
				b.StopTimer()
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				if st.Exported != uint64(n) {
					b.Fatalf("replay exported %d of %d BOMs: %+v", st.Exported, n, st)
				}
				rates = append(rates, float64(n)/elapsed.Seconds())
				cpus = append(cpus, float64(cpu.Microseconds())/float64(n))
			}
			b.ReportMetric(median(rates), "msgs/s")
			b.ReportMetric(median(cpus), "cpu-us/msg")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchFillBOMs renders events and publishes the BOMs to BOMS the way the
// transformer does (subject, headers, Nats-Msg-Id = bomHash).
func benchFillBOMs(b *testing.B, bus *stream.Bus, events []schemas.WorkloadChange) {
	r, err := transformer.NewRenderer(transformer.Config{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var pending []jetstream.PubAckFuture
	flush := func() {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
		pending = pending[:0]
	}
	for i, ev := range events {
		res, err := r.Render(ev)
		if err != nil || res.BOM == nil {
			b.Fatalf("render %s: %v %s", ev.Data.Workload, err, res.Skipped)
		}
		w := ev.Data.Workload
		hash := schemas.BomHash(res.BOM)
		bm := &schemas.BOMMessage{Workload: w, ChangeSeq: uint64(i + 1), BomHash: hash, InputHash: ev.Data.InputHash, BOM: res.BOM}
		h, body, err := bm.Encode()
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(bm.Subject())
		m.Header, m.Data = h, body
		_, js := bus.Raw()
		f, err := js.PublishMsgAsync(m, jetstream.WithMsgID(schemas.BOMMsgID(w, uint64(i+1))), jetstream.WithExpectStream(schemas.StreamBOMs))
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, f); len(pending) == 1000 {
			flush()
		}
	}
	flush()
}

// benchPipeline is a running pipeline with a recording file sink.
type benchPipeline struct {
	p    *process.Pipeline
	rec  *benchRecorder
	stop func(b *testing.B)
}

// benchStartPipeline wires the transformer and one file sink called "bench"
// (wrapped by a benchRecorder expecting want BOMs) with newPipeline, on a
// fresh embedded server, with the default stage settings and an Info-level
// logger writing to io.Discard (what `bomstream run` logs, minus the
// terminal), and starts it.
func benchStartPipeline(b *testing.B, fsync bool, want int) *benchPipeline {
	dir := benchTempDir(b)
	rec := newBenchRecorder(want)
	reg := registry.Builtin()
	reg["benchfile"] = sinks.Type{
		NewConfig:   file.SinkType.NewConfig,
		Concurrency: file.SinkType.Concurrency,
		New: func(ctx context.Context, c sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			s, err := file.SinkType.New(ctx, c, deps)
			if err != nil {
				return nil, err
			}
			rec.Sink = s
			return rec, nil
		},
	}
	cfg := process.DefaultConfig()
	cfg.Cluster = benchCluster
	cfg.Stream.DataDir = filepath.Join(dir, "data")
	cfg.Sinks = []process.SinkConfig{{Name: "bench", Type: "benchfile", Config: map[string]any{
		"dir": filepath.Join(dir, "boms"), "fsync": fsync,
	}}}
	p, err := process.New(context.Background(), cfg, process.Parts{Transformer: true, Sinks: []string{"*"}}, process.Env{Sinks: reg}, benchLogger())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return &benchPipeline{p: p, rec: rec, stop: func(b *testing.B) {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		p.Close()
	}}
}

// retries counts the transformer's and the sink's retries so far; it fails
// the benchmark when anything was dead-lettered.
func (bp *benchPipeline) retries(b *testing.B) float64 {
	mfs, err := bp.p.Metrics().Gather()
	if err != nil {
		b.Fatal(err)
	}
	sum := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			sum[mf.GetName()] += m.GetCounter().GetValue()
		}
	}
	var dlq float64
	for _, mf := range mfs {
		if mf.GetName() != "bomstream_stage_messages_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == "dead-lettered" {
					dlq += m.GetCounter().GetValue()
				}
			}
		}
	}
	if dlq > 0 {
		b.Fatalf("%v messages dead-lettered", dlq)
	}
	// A BOM the sink sees again (a redelivery) counts as a retry too.
	dups := float64(bp.p.SinkStats("bench").SkippedDuplicate)
	return sum["bomstream_stage_retries_total"] + sum["bomstream_stage_redeliveries_total"] + dups
}

func benchLogger() *zap.Logger {
	return process.NewLogger(process.LogConfig{}, zapcore.AddSync(io.Discard))
}

//go:fix inline
func benchFsync(on bool) *bool { return new(on) }

// benchRecorder is a sink that passes BOMs on to the file sink and records,
// per workload uid, when the first successful Export returned.
type benchRecorder struct {
	sinks.Sink
	want int
	mu   sync.Mutex
	at   map[string]time.Time
	done chan struct{}
	more chan struct{} // signalled (without blocking) on each new workload
}

func newBenchRecorder(want int) *benchRecorder {
	return &benchRecorder{want: want, at: make(map[string]time.Time, want), done: make(chan struct{}), more: make(chan struct{}, 1)}
}

func (r *benchRecorder) Export(ctx context.Context, bom sinks.BOM) error {
	if err := r.Sink.Export(ctx, bom); err != nil {
		return err
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.at[bom.Workload.UID]; ok {
		return nil
	}
	r.at[bom.Workload.UID] = now
	if len(r.at) == r.want {
		close(r.done)
	}
	select {
	case r.more <- struct{}{}:
	default:
	}
	return nil
}

func (r *benchRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

// wait returns once want distinct workloads were exported.
func (r *benchRecorder) wait(b *testing.B, ctx context.Context) {
	select {
	case <-r.done:
	case <-ctx.Done():
		b.Fatalf("exported %d of %d BOMs: %v", r.count(), r.want, ctx.Err())
	}
}

// waitFor returns once n distinct workloads were exported.
func (r *benchRecorder) waitFor(b *testing.B, ctx context.Context, n int) {
	for r.count() < n {
		select {
		case <-r.more:
		case <-ctx.Done():
			b.Fatalf("exported %d of %d BOMs: %v", r.count(), n, ctx.Err())
		}
	}
}

func (r *benchRecorder) exportedAt(b *testing.B, uid string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.at[uid]
	if !ok {
		b.Fatalf("workload %s was never exported", uid)
	}
	return t
}

// benchEvents builds n observation events of distinct Deployments, each
// serving a distinct model with vLLM, as the collector would publish them.
func benchEvents(b *testing.B, prefix string, n int) []schemas.WorkloadChange {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	out := make([]schemas.WorkloadChange, n)
	for i := range out {
		ev, err := schemas.NewObserved("bomstream/collector/"+benchCluster, at, benchInputs(prefix, i))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = ev
	}
	return out
}

// benchInputs is what the collector makes of a Deployment running the vLLM
// OpenAI server for model bench-org/model-<i>, with its image digest
// resolved from a running pod and a ReplicaSet it owns.
func benchInputs(prefix string, i int) *schemas.Inputs {
	name := fmt.Sprintf("%sllm-%06d", prefix, i)
	uid := fmt.Sprintf("%s%08x-7c1e-4d2a-9b1f-%012x", prefix, i, i*7919)
	const image = "vllm/vllm-openai:v0.8.5"
	loc := "spec.template.spec.containers[0]"
	return &schemas.Inputs{
		Workload: schemas.Workload{Cluster: benchCluster, Namespace: "serving", APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: uid},
		Components: []schemas.Component{{
			Name:    name,
			Locator: "spec.template",
			Containers: []schemas.Container{{
				Name: "vllm", Locator: loc, Image: image,
				Command: []string{"python3", "-m", "vllm.entrypoints.openai.api_server"},
				Args: []string{
					"--model", fmt.Sprintf("bench-org/model-%06d", i),
					"--tensor-parallel-size", "2", "--max-model-len", "8192",
					"--served-model-name", fmt.Sprintf("model-%d", i), "--port", "8000",
				},
				Env: []schemas.EnvVar{
					{Name: "HF_HOME", Value: "/models/hf"},
					{Name: "VLLM_LOGGING_LEVEL", Redacted: true},
					{Name: "HF_TOKEN", From: &schemas.KeyRef{Kind: "secret", Name: "hf-token", Key: "token"}},
				},
			}},
			Labels: map[string]string{"app.kubernetes.io/name": name},
		}},
		Owned: []schemas.ObjectRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-6d8f9c7b5d", UID: uid + "-rs"}},
		Digests: []schemas.ImageDigest{{
			Image:   image,
			Digest:  "sha256:4f2b7e2a1c8d9e0f3a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b",
			Locator: "status.containerStatuses[0].imageID",
		}},
		Source: "cluster",
	}
}

func benchEnvInt(b testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// benchTempDir is a new directory under BOMSTREAM_BENCH_DIR, or under the
// test's temporary directory when that is unset, removed after the benchmark
// unless BOMSTREAM_BENCH_KEEP is set.
func benchTempDir(b *testing.B) string {
	keep := os.Getenv("BOMSTREAM_BENCH_KEEP") != ""
	base := os.Getenv("BOMSTREAM_BENCH_DIR")
	if base == "" && !keep {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(base, "bomstream-bench-")
	if err != nil {
		b.Fatal(err)
	}
	if keep {
		fmt.Printf("kept (BOMSTREAM_BENCH_KEEP): %s\n", dir)
	} else {
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	return dir
}
