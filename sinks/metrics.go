package sinks

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetric registers c on reg, or returns the collector already
// registered there under the same description, so that several sinks (and
// their runners) share one family per metric, each with its own sink label.
// It is engine.Register for the sinks, which need not link the stream layer
// to count what they do.
func RegisterMetric[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
