package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/stream/engine"
)

// metrics of one Service, besides the engine's stage metrics. They always
// exist so that the code counts unconditionally; New registers them only
// when given a Registerer.
type metrics struct {
	rendered      prometheus.Counter
	skipped       *prometheus.CounterVec
	tombstones    *prometheus.CounterVec
	renderSeconds prometheus.Histogram
}

func newMetrics() metrics {
	const ns, sub = "bomstream", "transformer"
	return metrics{
		rendered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rendered_total",
			Help: "BOMs rendered and published to BOMS (including ones the stream dropped as duplicates)."}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "skipped_total",
			Help: "Change events that published nothing, by reason (not-serving: no BOM, and none current to retire; already-published: a redelivery)."}, []string{"reason"}),
		tombstones: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "tombstones_total",
			Help: "Tombstones published to BOMS, by reason (deleted, not-serving)."}, []string{"reason"}),
		renderSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "render_seconds",
			Help: "Time to render one change event.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	var err error
	if m.rendered, err = engine.Register(reg, m.rendered); err != nil {
		return err
	}
	if m.skipped, err = engine.Register(reg, m.skipped); err != nil {
		return err
	}
	if m.tombstones, err = engine.Register(reg, m.tombstones); err != nil {
		return err
	}
	m.renderSeconds, err = engine.Register(reg, m.renderSeconds)
	return err
}
