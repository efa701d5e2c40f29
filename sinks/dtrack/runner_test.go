package dtrack_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

// pipeline is a sink consuming BOMS on an embedded JetStream through the
// real runner. runPipeline is the one place this package's tests wire the
// runner, so that a change of its API is met here alone.
type pipeline struct {
	bus     *stream.Bus
	durable string
	stats   func() (exported, deadLettered, retries uint64)
}

func runPipeline(t *testing.T, s sinks.Sink) pipeline {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	bus, err := stream.Open(ctx, stream.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.Config{}
	// Transient errors are retried until the outage ends (MaxAttempts 0).
	cfg.Concurrency, cfg.BaseBackoff, cfg.MaxBackoff = 8, 20*time.Millisecond, time.Second
	r, err := runner.New(bus, s, cfg, dtrack.SinkType.LatestOnly, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("runner: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("runner did not stop")
		}
		bus.Close()
	})
	return pipeline{bus: bus, durable: "sink-" + s.Name(), stats: func() (uint64, uint64, uint64) {
		st := r.Stats()
		return st.Exported, st.DeadLettered, st.Retries
	}}
}

// publish puts b on BOMS as the transformer does.
func (p pipeline) publish(t *testing.T, b sinks.BOM) {
	t.Helper()
	bm := &schemas.BOMMessage{Workload: b.Workload, ChangeSeq: b.ChangeSeq, EventTime: b.Time,
		BomHash: b.BomHash, InputHash: b.InputHash, BOM: b.Body}
	h, body, err := bm.Encode()
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(bm.Subject())
	m.Header, m.Data = h, body
	if _, err := p.bus.Writer().Publish(context.Background(), m, schemas.BOMMsgID(b.Workload, b.ChangeSeq)); err != nil {
		t.Fatal(err)
	}
}

func (p pipeline) caughtUp(t *testing.T) bool {
	done, err := p.bus.Durables().CaughtUp(context.Background(), schemas.StreamBOMs, p.durable)
	return err == nil && done
}

// A 30-second outage of Dependency-Track in the middle of 500 BOMs: every
// BOM ends imported exactly once, none is lost or dead-lettered.
func TestOutageInTheMiddleOf500BOMs(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("a 30-second outage")
	}
	const n, outage = 500, 30 * time.Second
	dt := newDouble(t, dtracktest.Options{ProcessingDelay: time.Millisecond, AnalysisDelay: 5 * time.Millisecond})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) {
		c.RequestTimeout, c.ProcessingTimeout, c.PollInterval = 5*time.Second, 10*time.Second, 200*time.Millisecond
	})
	p := runPipeline(t, s.Sink)
	var boms []sinks.BOM
	for i := range n {
		w := workload(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("model-%03d", i))
		b := aiBOM(t, w, uint64(1000+i), runtimePart("vllm", "0.8."+strconv.Itoa(i%5)), model(fmt.Sprintf("org/m-%d", i), "r1"))
		boms = append(boms, b)
		p.publish(t, b)
	}
	imported := func() int {
		total := 0
		for _, c := range dt.ProcessedAll() {
			total += c
		}
		return total
	}
	bustest.Eventually(t, "half the BOMs", 2*time.Minute, func() bool { return imported() >= n/2 })
	dt.Down(outage)
	atDown, downAt := imported(), time.Now()
	if atDown >= n {
		t.Fatalf("all %d BOMs were imported before the outage", atDown)
	}
	_, _, retriesAtDown := p.stats()
	t.Logf("outage of %s starts with %d of %d BOMs imported", outage, atDown, n)

	bustest.Eventually(t, "every BOM", outage+3*time.Minute, func() bool { return imported() >= n })
	bustest.Eventually(t, "the consumer to catch up", time.Minute, func() bool { return p.caughtUp(t) })
	t.Logf("all imported %s after the outage began", time.Since(downAt).Round(time.Millisecond))
	if time.Since(downAt) < outage {
		t.Fatalf("all imported %s after an outage of %s began", time.Since(downAt), outage)
	}
	for _, b := range boms {
		if c := dt.Processed(b.BomHash); c != 1 {
			t.Errorf("%s imported %d times", b.Workload, c)
		}
		if pr := mustProject(t, dt, projectName(b.Workload)); pr.BomHash != b.BomHash || !pr.Active {
			t.Errorf("%s: project holds %s (active %v)", b.Workload, pr.BomHash, pr.Active)
		}
	}
	exported, dead, retries := p.stats()
	if exported != n || dead != 0 {
		t.Fatalf("runner: %d exported, %d dead-lettered; want %d and 0", exported, dead, n)
	}
	if retries == retriesAtDown {
		t.Fatal("no retry during the outage: it was not felt")
	}
	if got := dt.Calls("PUT /api/v1/bom"); got < n {
		t.Fatalf("%d uploads for %d BOMs", got, n)
	}
	s.assertNoKey(t)
}
