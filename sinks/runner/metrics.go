package runner

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/sinks"
)

// Stats counts what a runner or a replay did.
type Stats struct {
	Exported          uint64 // BOMs written by the sink
	Tombstones        uint64 // tombstones applied by the sink
	SkippedDuplicate  uint64 // the ledger holds this version or a newer one
	SkippedSuperseded uint64 // latest-only: BOMS holds a newer version
	DeadLettered      uint64 // sent to the DLQ (permanent error, bad message, poison)
	Retries           uint64 // transient errors retried
}

type counters struct {
	exported, tombstones, dup, superseded atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Exported: c.exported.Load(), Tombstones: c.tombstones.Load(),
		SkippedDuplicate: c.dup.Load(), SkippedSuperseded: c.superseded.Load(),
	}
}

// metrics are the prometheus series of one sink, all labelled sink=<name>;
// the engine's bomstream_stage_* series (stage="sink.<name>") count
// retries, dead letters and redeliveries.
type metrics struct {
	exported, tombstones prometheus.Counter
	skipped              *prometheus.CounterVec // reason
	exportSeconds        prometheus.Observer
	up                   prometheus.Gauge
}

// newMetrics registers the sink metric families on reg (nil: unregistered).
// Runners of different sinks share one registry: a family registered by an
// earlier runner is reused.
func newMetrics(reg prometheus.Registerer, sink string) (*metrics, error) {
	const ns, sub = "bomstream", "sink"
	exported := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "exported_total",
		Help: "BOMs written by the sink."}, []string{"sink"})
	tombstones := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "tombstones_total",
		Help: "Tombstones applied by the sink."}, []string{"sink"})
	skipped := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "skipped_total",
		Help: "Messages not written, by reason (duplicate: the ledger has this version or a newer one; superseded: latest-only and BOMS has a newer one)."}, []string{"sink", "reason"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "export_seconds",
		Help: "Duration of one Export or Tombstone call.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}, []string{"sink"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "up",
		Help: "1 while the sink's runner is consuming and its store takes what it is given; 0 while it is down or degraded."}, []string{"sink"})
	if reg != nil {
		var err error
		if exported, err = sinks.RegisterMetric(reg, exported); err != nil {
			return nil, err
		}
		if tombstones, err = sinks.RegisterMetric(reg, tombstones); err != nil {
			return nil, err
		}
		if skipped, err = sinks.RegisterMetric(reg, skipped); err != nil {
			return nil, err
		}
		if seconds, err = sinks.RegisterMetric(reg, seconds); err != nil {
			return nil, err
		}
		if up, err = sinks.RegisterMetric(reg, up); err != nil {
			return nil, err
		}
	}
	return &metrics{
		exported: exported.WithLabelValues(sink), tombstones: tombstones.WithLabelValues(sink),
		skipped:       skipped.MustCurryWith(prometheus.Labels{"sink": sink}),
		exportSeconds: seconds.WithLabelValues(sink), up: up.WithLabelValues(sink),
	}, nil
}
