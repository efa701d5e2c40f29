package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// State is how a stage is doing.
type State string

// States of a stage, from best to worst.
const (
	// StateUp: consuming, nothing failing.
	StateUp State = "up"
	// StateDegraded: consuming, but some messages keep failing (a store is
	// down, a call hung): they are retried and nothing is lost, but they are
	// not getting through.
	StateDegraded State = "degraded"
	// StateDown: not consuming (no consumer, no connection); being set up again.
	StateDown State = "down"
	// StateStopped: not running.
	StateStopped State = "stopped"
)

// Health is a stage's state and, unless it is up, why.
type Health struct {
	State  State
	Reason string
	Since  time.Time
}

// Err is nil when the stage is up, else an error saying why.
func (h Health) Err() error {
	if h.State == StateUp {
		return nil
	}
	if h.Reason == "" {
		return errors.New(string(h.State))
	}
	return fmt.Errorf("%s: %s", h.State, h.Reason)
}

// health tracks an engine's state: the consumer's (up, down, stopped) and
// the subjects whose messages keep failing.
type health struct {
	mu     sync.Mutex
	base   State
	reason string
	since  time.Time
	fails  map[string]failure
}

type failure struct {
	reason string
	since  time.Time
}

func (h *health) set(s State, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.base != s {
		h.since = time.Now()
	}
	h.base, h.reason = s, reason
}

func (h *health) state() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.base
}

func (h *health) failing(subject, reason string, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fails == nil {
		h.fails = map[string]failure{}
	}
	h.fails[subject] = failure{reason: reason, since: since}
}

func (h *health) recovered(subject string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.fails, subject)
}

// Health reports the engine's state. A stage that is up but has messages
// failing for a while, or handler calls it had to abandon, is degraded.
func (e *Engine) Health() Health {
	h := &e.health
	h.mu.Lock()
	defer h.mu.Unlock()
	out := Health{State: h.base, Reason: h.reason, Since: h.since}
	if out.State != StateUp {
		return out
	}
	var parts []string
	if n := e.abandoned.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d handler calls timed out and have not returned", n))
	}
	if len(h.fails) > 0 {
		var oldest failure
		subjects := make([]string, 0, len(h.fails))
		for s, f := range h.fails {
			subjects = append(subjects, s)
			if oldest.since.IsZero() || f.since.Before(oldest.since) {
				oldest = f
			}
		}
		sort.Strings(subjects)
		parts = append(parts, fmt.Sprintf("%d workloads failing since %s, last error: %s",
			len(subjects), oldest.since.UTC().Format(time.RFC3339), oldest.reason))
		out.Since = oldest.since
	}
	if len(parts) > 0 {
		out.State, out.Reason = StateDegraded, strings.Join(parts, "; ")
	}
	return out
}

// engineMetrics are the metrics of one stage, labelled by stage.
type engineMetrics struct {
	handled      *prometheus.CounterVec
	retries      prometheus.Counter
	redeliveries prometheus.Counter
	abandoned    prometheus.Counter
	seconds      prometheus.Observer
	inFlight     prometheus.Gauge
	up           prometheus.Gauge
}

func newEngineMetrics(reg prometheus.Registerer, stage string) (*engineMetrics, error) {
	const ns, sub = "bomstream", "stage"
	handled := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "messages_total",
		Help: "Messages a stage settled, by outcome (ok, dead-lettered)."}, []string{"stage", "outcome"})
	retries := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "retries_total",
		Help: "Handler calls that failed transiently and were retried."}, []string{"stage"})
	redeliveries := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "redeliveries_total",
		Help: "Messages received again after an earlier holder did not settle them."}, []string{"stage"})
	abandoned := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "abandoned_calls_total",
		Help: "Handler calls that outlived the attempt timeout and were given up on."}, []string{"stage"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "handle_seconds",
		Help: "Duration of one handler call.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"stage"})
	inFlight := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "in_flight",
		Help: "Messages the stage holds: queued behind their workload or being handled."}, []string{"stage"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "up",
		Help: "1 while the stage's consumer is consuming, else 0."}, []string{"stage"})
	if reg != nil {
		var err error
		if handled, err = Register(reg, handled); err != nil {
			return nil, err
		}
		if retries, err = Register(reg, retries); err != nil {
			return nil, err
		}
		if redeliveries, err = Register(reg, redeliveries); err != nil {
			return nil, err
		}
		if abandoned, err = Register(reg, abandoned); err != nil {
			return nil, err
		}
		if seconds, err = Register(reg, seconds); err != nil {
			return nil, err
		}
		if inFlight, err = Register(reg, inFlight); err != nil {
			return nil, err
		}
		if up, err = Register(reg, up); err != nil {
			return nil, err
		}
	}
	return &engineMetrics{
		handled:      handled.MustCurryWith(prometheus.Labels{"stage": stage}),
		retries:      retries.WithLabelValues(stage),
		redeliveries: redeliveries.WithLabelValues(stage),
		abandoned:    abandoned.WithLabelValues(stage),
		seconds:      seconds.WithLabelValues(stage),
		inFlight:     inFlight.WithLabelValues(stage),
		up:           up.WithLabelValues(stage),
	}, nil
}

// Register registers c on reg, or returns the collector already registered
// under the same description, so that the engines and runners of several
// stages share one family per metric.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
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
