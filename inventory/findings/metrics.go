package findings

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/engine"
)

// openGauge is bomstream_findings{rule,severity,cluster,namespace}: the
// open findings, as far as this process knows them (read from FINDINGS at
// start, then kept by what the stage reads and writes).
type openGauge struct {
	g *prometheus.GaugeVec

	mu       sync.Mutex
	open     map[gaugeKey]*gaugeChild // an open finding -> its labels' gauge
	children map[[4]string]*gaugeChild
}

// gaugeKey names a finding in the gauge.
type gaugeKey struct{ cluster, uid, rule, subject string }

// gaugeChild is the gauge of one set of labels.
type gaugeChild struct {
	labels [4]string
	g      prometheus.Gauge
}

// child is the gauge of labels l (WithLabelValues hashes them each call);
// the caller holds o.mu.
func (o *openGauge) child(l [4]string) *gaugeChild {
	c, ok := o.children[l]
	if !ok {
		c = &gaugeChild{labels: l, g: o.g.WithLabelValues(l[:]...)}
		o.children[l] = c
	}
	return c
}

func newOpenGauge(reg prometheus.Registerer) (*openGauge, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "bomstream", Name: "findings",
		Help: "Open policy findings."}, []string{"rule", "severity", "cluster", "namespace"})
	if reg != nil {
		var err error
		if g, err = engine.Register(reg, g); err != nil {
			return nil, err
		}
	}
	return &openGauge{g: g, open: map[gaugeKey]*gaugeChild{}, children: map[[4]string]*gaugeChild{}}, nil
}

// set records the state of the finding whose last event is ev.
func (o *openGauge) set(ev schemas.FindingEvent) {
	key := gaugeKey{ev.Workload.Cluster, ev.Workload.UID, ev.Rule, ev.Subject}
	open := ev.State == schemas.FindingOpened
	o.mu.Lock()
	defer o.mu.Unlock()
	old, was := o.open[key]
	if was && open && old.labels == [4]string{ev.Rule, ev.Severity, ev.Workload.Cluster, ev.Workload.Namespace} {
		return
	}
	if was {
		old.g.Dec()
		delete(o.open, key)
	}
	if open {
		c := o.child([4]string{ev.Rule, ev.Severity, ev.Workload.Cluster, ev.Workload.Namespace})
		o.open[key] = c
		c.g.Inc()
	}
}

// reset forgets every finding, before a full read of FINDINGS.
func (o *openGauge) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.g.Reset()
	clear(o.open)
	clear(o.children)
}
