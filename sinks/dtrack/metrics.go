package dtrack

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/sinks"
)

// metrics are the sink's own series, labelled sink=<name>; the runner
// already counts exports, retries and dead letters.
type metrics struct {
	uploads           *prometheus.CounterVec // method: put, multipart, multipart-gzip
	exportSeconds     prometheus.Observer
	processingSeconds prometheus.Observer
}

func newMetrics(reg prometheus.Registerer, sink string) (*metrics, error) {
	const ns, sub = "bomstream", "dtrack"
	uploads := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "uploads_total",
		Help: "BOM uploads to Dependency-Track, by method (put, multipart, multipart-gzip)."}, []string{"sink", "method"})
	export := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "export_seconds",
		Help: "Time from the start of an Export to the confirmed import.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 10)}, []string{"sink"})
	processing := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "processing_seconds",
		Help: "Time Dependency-Track took to import an uploaded BOM, as seen by polling.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 10)}, []string{"sink"})
	if reg != nil {
		var err error
		if uploads, err = sinks.RegisterMetric(reg, uploads); err != nil {
			return nil, err
		}
		if export, err = sinks.RegisterMetric(reg, export); err != nil {
			return nil, err
		}
		if processing, err = sinks.RegisterMetric(reg, processing); err != nil {
			return nil, err
		}
	}
	return &metrics{
		uploads:           uploads.MustCurryWith(prometheus.Labels{"sink": sink}),
		exportSeconds:     export.WithLabelValues(sink),
		processingSeconds: processing.WithLabelValues(sink),
	}, nil
}
