package runner

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats counts what a runner or a replay did.
type Stats struct {
	Exported          uint64 // BOMs written by the sink
	Tombstones        uint64 // tombstones applied by the sink
	SkippedDuplicate  uint64 // already in the ledger
	SkippedSuperseded uint64 // latest-only: a newer version exists
	DeadLettered      uint64 // sent to the DLQ (permanent, exhausted, bad message)
	Retries           uint64 // transient errors retried
}

type counters struct {
	exported, tombstones, dup, superseded, dlq, retries atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Exported: c.exported.Load(), Tombstones: c.tombstones.Load(),
		SkippedDuplicate: c.dup.Load(), SkippedSuperseded: c.superseded.Load(),
		DeadLettered: c.dlq.Load(), Retries: c.retries.Load(),
	}
}

// metrics are the prometheus series of one sink, all labelled sink=<name>.
type metrics struct {
	exported, tombstones, retries, dlq prometheus.Counter
	skipped                            *prometheus.CounterVec // reason
	exportSeconds                      prometheus.Observer
	up                                 prometheus.Gauge
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
		Help: "Messages not written, by reason (duplicate, superseded)."}, []string{"sink", "reason"})
	retries := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "retries_total",
		Help: "Transient sink errors that were retried."}, []string{"sink"})
	dlq := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dlq_total",
		Help: "Messages sent to the dead-letter stream."}, []string{"sink"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "export_seconds",
		Help: "Duration of one Export or Tombstone call.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}, []string{"sink"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "up",
		Help: "1 while the sink's runner is consuming, else 0."}, []string{"sink"})
	if reg != nil {
		var err error
		if exported, err = register(reg, exported); err != nil {
			return nil, err
		}
		if tombstones, err = register(reg, tombstones); err != nil {
			return nil, err
		}
		if skipped, err = register(reg, skipped); err != nil {
			return nil, err
		}
		if retries, err = register(reg, retries); err != nil {
			return nil, err
		}
		if dlq, err = register(reg, dlq); err != nil {
			return nil, err
		}
		if seconds, err = register(reg, seconds); err != nil {
			return nil, err
		}
		if up, err = register(reg, up); err != nil {
			return nil, err
		}
	}
	return &metrics{
		exported: exported.WithLabelValues(sink), tombstones: tombstones.WithLabelValues(sink),
		retries: retries.WithLabelValues(sink), dlq: dlq.WithLabelValues(sink),
		skipped:       skipped.MustCurryWith(prometheus.Labels{"sink": sink}),
		exportSeconds: seconds.WithLabelValues(sink), up: up.WithLabelValues(sink),
	}, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
