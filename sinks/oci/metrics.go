package oci

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/sinks"
)

// metrics are the oci sink's own series, labelled sink=<name>, next to
// the runner's bomstream_sink_* families.
type metrics struct {
	skipped *prometheus.CounterVec // by reason
	pushed  prometheus.Counter
	present prometheus.Counter

	attPushed  prometheus.Counter
	attPresent prometheus.Counter
}

// newMetrics registers the families on reg (nil: unregistered); families
// that another oci sink registered already are shared.
func newMetrics(reg prometheus.Registerer, sink string) (*metrics, error) {
	const ns, sub = "bomstream", "sink_oci"
	skipped := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "images_skipped_total",
		Help: "Images of exported BOMs that got no artifact, by reason (no-digest, bad-digest, bad-reference)."}, []string{"sink", "reason"})
	artifacts := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "artifacts_total",
		Help: "BOM artifacts per image, by result: pushed (new) or present (already a referrer of the image)."}, []string{"sink", "result"})
	attestations := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "attestations_total",
		Help: "Signed BOM attestations per image, by result: pushed (new) or present (one for this BOM version is there)."}, []string{"sink", "result"})
	if reg != nil {
		var err error
		if skipped, err = sinks.RegisterMetric(reg, skipped); err != nil {
			return nil, err
		}
		if artifacts, err = sinks.RegisterMetric(reg, artifacts); err != nil {
			return nil, err
		}
		if attestations, err = sinks.RegisterMetric(reg, attestations); err != nil {
			return nil, err
		}
	}
	return &metrics{
		skipped: skipped.MustCurryWith(prometheus.Labels{"sink": sink}),
		pushed:  artifacts.WithLabelValues(sink, "pushed"),
		present: artifacts.WithLabelValues(sink, "present"),

		attPushed:  attestations.WithLabelValues(sink, "pushed"),
		attPresent: attestations.WithLabelValues(sink, "present"),
	}, nil
}
