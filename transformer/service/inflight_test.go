package service

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

func TestMaxInFlightConfig(t *testing.T) {
	for _, n := range []int{-1, maxInFlight + 1} {
		err := Config{MaxInFlight: n}.Validate()
		if err == nil || !strings.Contains(err.Error(), "transformer.maxInFlight") {
			t.Errorf("MaxInFlight %d: error %v, want one naming transformer.maxInFlight", n, err)
		}
	}
	for _, c := range []struct{ in, want Config }{
		{Config{}, Config{Concurrency: 1, MaxInFlight: DefaultMaxInFlight}},
		{Config{MaxInFlight: 1}, Config{Concurrency: 1, MaxInFlight: 1}},
		{Config{Concurrency: 8, MaxInFlight: 2}, Config{Concurrency: 8, MaxInFlight: 8}},
		{Config{Concurrency: 300}, Config{Concurrency: 300, MaxInFlight: 300}},
	} {
		got := c.in.withDefaults()
		if got.Concurrency != c.want.Concurrency || got.MaxInFlight != c.want.MaxInFlight {
			t.Errorf("%+v with defaults: concurrency %d maxInFlight %d, want %d %d",
				c.in, got.Concurrency, got.MaxInFlight, c.want.Concurrency, c.want.MaxInFlight)
		}
	}
}

// One replica publishes each workload's BOMs in CHANGES order, whether it
// renders one event at a time or several with many publishes outstanding.
func TestOneReplicaKeepsEachWorkloadsOrder(t *testing.T) {
	for _, cfg := range []Config{
		{Concurrency: 1, MaxInFlight: 1},
		{Concurrency: 1},
		{Concurrency: 4, MaxInFlight: 64},
	} {
		t.Run(fmt.Sprintf("concurrency=%d,maxInFlight=%d", cfg.Concurrency, cfg.MaxInFlight), func(t *testing.T) {
			b := openBus(t, stream.Config{})
			r := newTestRenderer()
			const workloads, versions = 8, 6
			for v := range versions {
				for i := range workloads {
					publish(t, b, event(t, workload(fmt.Sprint("w", i)), fmt.Sprintf("vllm:%d", v)))
				}
			}
			s := newService(t, b, r, cfg, prometheus.NewRegistry())
			run(t, s)
			eventually(t, "all events are resolved", func() bool { return settled(t, b, DefaultDurable) })
			if got := r.totalCalls(); got != workloads*versions {
				t.Errorf("%d renders, want %d (one per event)", got, workloads*versions)
			}
			last := map[string]uint64{}
			msgs := messages(t, b, schemas.StreamBOMs, "")
			for _, m := range msgs {
				seq, err := strconv.ParseUint(m.Header.Get(schemas.HeaderChangeSeq), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				if seq <= last[m.Subject] {
					t.Errorf("%s: BOM of change %d stored after the BOM of change %d", m.Subject, seq, last[m.Subject])
				}
				last[m.Subject] = seq
			}
			if len(msgs) != workloads*versions {
				t.Errorf("BOMS holds %d messages, want %d", len(msgs), workloads*versions)
			}
		})
	}
}

// An event is acked only once the BOMS stream has stored its BOM: while the
// stream is missing, the event stays unacknowledged and is retried.
func TestEventIsAckedOnlyAfterTheBOMIsStored(t *testing.T) {
	b := openBus(t, stream.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.JS.DeleteStream(ctx, schemas.StreamBOMs); err != nil {
		t.Fatal(err)
	}
	r := newTestRenderer()
	w := workload("late-stream")
	ev := event(t, w, "vllm:1")
	publish(t, b, ev)
	reg := prometheus.NewRegistry()
	s := newService(t, b, r, Config{RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 50 * time.Millisecond, MaxDeliver: 1000}, reg)
	run(t, s)
	eventually(t, "the event is retried", func() bool { return r.callsOf(ev.ID) >= 2 })
	if settled(t, b, DefaultDurable) {
		t.Fatal("the event was acked although its BOM could not be stored")
	}
	if got := counter(t, reg, "bomstream_transformer_rendered_total"); got != 0 {
		t.Errorf("rendered_total = %v before any BOM was stored", got)
	}
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event is acked once BOMS exists", func() bool { return settled(t, b, DefaultDurable) })
	if got := len(messages(t, b, schemas.StreamBOMs, schemas.BOMsSubject(w))); got != 1 {
		t.Fatalf("BOMS holds %d messages for the workload, want 1", got)
	}
	if got := counter(t, reg, "bomstream_transformer_rendered_total"); got != 1 {
		t.Errorf("rendered_total = %v, want 1", got)
	}
}
