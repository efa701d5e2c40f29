package service

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics of one Service. They always exist so that the code counts
// unconditionally; New registers them only when given a Registerer.
type metrics struct {
	rendered      prometheus.Counter
	skipped       prometheus.Counter
	tombstones    prometheus.Counter
	dlq           prometheus.Counter
	retries       prometheus.Counter
	renderSeconds prometheus.Histogram
}

func newMetrics() metrics {
	const ns, sub = "bomstream", "transformer"
	return metrics{
		rendered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rendered_total",
			Help: "BOMs rendered and published to BOMS (including ones the stream dropped as duplicates)."}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "skipped_total",
			Help: "Change events of workloads with no serving runtime and no model: no BOM."}),
		tombstones: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "tombstones_total",
			Help: "Tombstones published to BOMS."}),
		dlq: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dlq_total",
			Help: "Change events parked on the dead-letter stream."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "retries_total",
			Help: "Change events handed back for redelivery after a failure."}),
		renderSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "render_seconds",
			Help: "Time to render one change event.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
	}
}

func (m metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.rendered, m.skipped, m.tombstones, m.dlq, m.retries, m.renderSeconds} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
