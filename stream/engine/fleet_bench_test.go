package engine

// Benchmarks of the fleet shapes (issue 19), in-process servers on
// loopback: the pipeline's throughput and change-to-export latency on a
// 3-node cluster with R3 streams against the single embedded server, the
// time publishes stall when the leader of CHANGES stops, and the rate at
// which a hub catches up with an edge that was offline.
//
//	go test -run '^$' -bench 'Fleet' -benchtime 1x -count 3 ./stream/engine/

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/clustertest"
)

const benchSentHeader = "Bench-Sent"

func benchChange(b testing.TB, cluster string, i, r int) schemas.WorkloadChange {
	w := schemas.Workload{Cluster: cluster, Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment",
		Name: fmt.Sprintf("llm-%05d", i), UID: fmt.Sprintf("uid-%05d", i)}
	in := &schemas.Inputs{Workload: w, Components: []schemas.Component{{
		Name: "main", Locator: "spec.template",
		Containers: []schemas.Container{{Name: "vllm", Locator: "spec.template.spec.containers[0]",
			Image: fmt.Sprintf("vllm/vllm-openai:v0.%d.0", r), Args: []string{"--model", fmt.Sprintf("org/m-%d-%d", i, r)}}},
	}}}
	ev, err := schemas.NewObserved("bench", time.Now().UTC(), in)
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

// runPipeline appends n changes of fresh workloads (collector-style batches
// of 500) through a transformer-like engine (CHANGES -> BOMS, one publish
// with a Nats-Msg-Id per change) and a sink-like engine on BOMS, and
// returns the changes per second and the p99 latency from a change's
// append to its export.
func runPipeline(b *testing.B, bus *stream.Bus, n int) (rate float64, p99 time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sent := sync.Map{} // uid -> append time
	var mu sync.Mutex
	var lat []time.Duration
	done := make(chan struct{})
	transform := func(ctx context.Context, m *Msg) error {
		ev, err := changelog.Decode(m.Data)
		if err != nil {
			return Permanent(err)
		}
		w := ev.Data.Workload
		out := nats.NewMsg(schemas.SubjectBOMsPrefix + w.Cluster + "." + w.UID)
		out.Data = m.Data
		out.Header.Set(schemas.HeaderChangeSeq, strconv.FormatUint(m.Seq, 10))
		_, err = bus.Writer().Publish(ctx, out, fmt.Sprintf("%s:%s:%d", w.Cluster, w.UID, m.Seq))
		return err
	}
	export := func(_ context.Context, m *Msg) error {
		uid := m.Subject[len(m.Subject)-len("uid-00000"):]
		t0, _ := sent.Load(uid)
		mu.Lock()
		lat = append(lat, time.Since(t0.(time.Time)))
		if len(lat) == n {
			close(done)
		}
		mu.Unlock()
		return nil
	}
	run := func(stage, streamName string, h Handler) {
		e, err := New(bus, Config{Stage: stage, Stream: streamName, Durable: stage}, h, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = e.Run(ctx) }()
	}
	run("bench-transformer", schemas.StreamChanges, transform)
	run("bench-sink", schemas.StreamBOMs, export)
	start := time.Now()
	changes := changelog.New(bus)
	for from := 0; from < n; from += 500 {
		var appends []changelog.Append
		now := time.Now()
		for i := from; i < min(from+500, n); i++ {
			ev := benchChange(b, "bench", i, 0)
			sent.Store(ev.Data.Workload.UID, now)
			appends = append(appends, changelog.Append{Event: ev})
		}
		for _, r := range changes.AppendChanges(ctx, appends) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("%d of %d exported", len(lat), n)
	}
	elapsed := time.Since(start)
	slices.Sort(lat)
	return float64(n) / elapsed.Seconds(), lat[len(lat)*99/100]
}

const benchChanges = 10000

func BenchmarkFleetPipelineEmbedded(b *testing.B) {
	for range b.N {
		bus := openEmbedded(b, stream.Config{})
		rate, p99 := runPipeline(b, bus, benchChanges)
		b.ReportMetric(rate, "changes/s")
		b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	}
}

func BenchmarkFleetPipelineCluster3(b *testing.B) {
	for range b.N {
		c := clustertest.Start(b, 3, clustertest.Options{})
		bus := openEmbedded(b, stream.Config{URL: c.URL(), Replicas: 3})
		rate, p99 := runPipeline(b, bus, benchChanges)
		b.ReportMetric(rate, "changes/s")
		b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	}
}

// BenchmarkFleetLeaderStop publishes changes one by one on a 3-node
// cluster, stops the leader of CHANGES, and reports the longest time a
// publish took around the stop: how long the pipeline's writes stall
// before the new leader answers.
func BenchmarkFleetLeaderStop(b *testing.B) {
	for range b.N {
		c := clustertest.Start(b, 3, clustertest.Options{})
		bus := openEmbedded(b, stream.Config{URL: c.URL(), Replicas: 3})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var worst time.Duration
		changes := changelog.New(bus)
		for i := range 2000 {
			if i == 1000 {
				c.StreamLeader(schemas.StreamChanges).Stop()
			}
			t0 := time.Now()
			if _, _, err := changes.PublishChange(ctx, benchChange(b, "bench", i, 0)); err != nil {
				b.Fatal(err)
			}
			worst = max(worst, time.Since(t0))
		}
		cancel()
		b.ReportMetric(worst.Seconds(), "recovery-s")
	}
}

// BenchmarkFleetHubCatchUp: an edge appends 10,000 changes while its link
// to the hub is cut; the link comes back and the hub's CHANGES sources
// them. It reports the time from the restore to the first change on the
// hub (the server's source retry backoff), the changes per second from
// there to the last, and the total.
func BenchmarkFleetHubCatchUp(b *testing.B) {
	for range b.N {
		hub := clustertest.Start(b, 1, clustertest.Options{Domain: "hub", Leaf: true})
		p := clustertest.NewProxy(b, fmt.Sprintf("127.0.0.1:%d", hub.Nodes[0].LeafPort))
		edge := openEmbedded(b, stream.Config{Domain: "edge-e1", Hub: stream.LeafRemote{URL: "nats-leaf://" + p.Addr()}})
		for hub.Nodes[0].Server().NumLeafNodes() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		hb := openEmbedded(b, stream.Config{URL: hub.URL(), Edges: []stream.Edge{{Domain: "edge-e1", Cluster: "e1"}}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		p.Cut()
		changes := changelog.New(edge)
		for from := 0; from < benchChanges; from += 500 {
			var appends []changelog.Append
			for i := from; i < from+500; i++ {
				appends = append(appends, changelog.Append{Event: benchChange(b, "e1", i, 0)})
			}
			for _, r := range changes.AppendChanges(ctx, appends) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
		p.Restore()
		start := time.Now()
		var first time.Time
		for {
			last, err := hb.Reader().LastSeq(ctx, schemas.StreamChanges)
			if err != nil {
				b.Fatal(err)
			}
			if last > 0 && first.IsZero() {
				first = time.Now()
			}
			if last >= benchChanges {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		b.ReportMetric(first.Sub(start).Seconds(), "first-s")
		b.ReportMetric(benchChanges/time.Since(first).Seconds(), "changes/s")
		b.ReportMetric(time.Since(start).Seconds(), "total-s")
	}
}
