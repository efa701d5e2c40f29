package findings

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/engine"
)

// tally is what the process knows of FINDINGS: the workloads it holds
// findings of, and their open findings, which the gauge
// bomstream_findings{rule,severity,cluster,namespace} counts. It is read
// from FINDINGS at start, then kept by what the stage reads and writes.
// One entry per workload keeps it small: a stage writes a set per BOM
// version that changes a finding.
type tally struct {
	g *prometheus.GaugeVec
	// loaded says the read at start completed: before it, every workload
	// may have findings (absent is false).
	loaded atomic.Bool

	mu        sync.RWMutex
	workloads map[[2]string]*tallied // {cluster, uid}
	children  map[[4]string]*gaugeChild
}

// tallied is one workload's open findings.
type tallied struct{ open []openFinding }

// openFinding is one open finding and the gauge of its labels.
type openFinding struct {
	rule, subject string
	c             *gaugeChild
}

// gaugeChild is the gauge of one set of labels.
type gaugeChild struct {
	labels [4]string // rule, severity, cluster, namespace
	g      prometheus.Gauge
}

func newTally(reg prometheus.Registerer) (*tally, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "bomstream", Name: "findings",
		Help: "Open policy findings."}, []string{"rule", "severity", "cluster", "namespace"})
	if reg != nil {
		var err error
		if g, err = engine.Register(reg, g); err != nil {
			return nil, err
		}
	}
	return &tally{g: g, workloads: map[[2]string]*tallied{}, children: map[[4]string]*gaugeChild{}}, nil
}

// child is the gauge of labels l (WithLabelValues hashes them each call);
// the caller holds t.mu.
func (t *tally) child(l [4]string) *gaugeChild {
	c, ok := t.children[l]
	if !ok {
		c = &gaugeChild{labels: l, g: t.g.WithLabelValues(l[:]...)}
		t.children[l] = c
	}
	return c
}

// entry is w's entry, made when missing; the caller holds t.mu.
func (t *tally) entry(w schemas.Workload) *tallied {
	key := [2]string{w.Cluster, w.UID}
	e, ok := t.workloads[key]
	if !ok {
		e = &tallied{}
		t.workloads[key] = e
	}
	return e
}

// set records the state of the finding whose last event is ev.
func (t *tally) set(ev schemas.FindingEvent) {
	t.setFinding(ev.Workload, ev.Rule, ev.Severity, ev.Subject, ev.State == schemas.FindingOpened)
}

// setFindings records the state of every finding of a set (which a
// stage read or wrote), or only those at the indexes ix when given, and
// that FINDINGS holds findings of its workload when it has any.
func (t *tally) setFindings(s *schemas.FindingSet, ix ...[]int) {
	if len(s.Findings) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(s.Workload)
	if len(ix) == 0 {
		for i := range s.Findings {
			t.setLocked(e, s.Workload, &s.Findings[i])
		}
		return
	}
	if len(e.open) == 0 {
		e.open = make([]openFinding, 0, len(ix[0])) // what a fresh workload's first set opens
	}
	for _, is := range ix {
		for _, i := range is {
			t.setLocked(e, s.Workload, &s.Findings[i])
		}
	}
}

// setFinding records that w's finding (rule, subject) is open or not, and
// that FINDINGS holds findings of w.
func (t *tally) setFinding(w schemas.Workload, rule, severity, subject string, open bool) {
	state := schemas.FindingResolved
	if open {
		state = schemas.FindingOpened
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setLocked(t.entry(w), w, &schemas.SetFinding{Rule: rule, Severity: severity, Subject: subject, State: state})
}

// setLocked records the state of f, a finding of w whose entry is e; the
// caller holds t.mu.
func (t *tally) setLocked(e *tallied, w schemas.Workload, f *schemas.SetFinding) {
	open := f.State == schemas.FindingOpened
	labels := [4]string{f.Rule, f.Severity, w.Cluster, w.Namespace}
	i := 0
	for i < len(e.open) && (e.open[i].rule != f.Rule || e.open[i].subject != f.Subject) {
		i++
	}
	if i < len(e.open) {
		if open && e.open[i].c.labels == labels {
			return
		}
		e.open[i].c.g.Dec()
		e.open = append(e.open[:i], e.open[i+1:]...)
	}
	if open {
		c := t.child(labels)
		e.open = append(e.open, openFinding{rule: f.Rule, subject: f.Subject, c: c})
		c.g.Inc()
	}
}

// known records that FINDINGS holds findings of w.
func (t *tally) known(w schemas.Workload) {
	key := [2]string{w.Cluster, w.UID}
	t.mu.RLock()
	_, ok := t.workloads[key]
	t.mu.RUnlock()
	if ok {
		return
	}
	t.mu.Lock()
	t.entry(w)
	t.mu.Unlock()
}

// absent reports whether FINDINGS holds no findings of w, as far as the
// process knows.
func (t *tally) absent(w schemas.Workload) bool {
	if !t.loaded.Load() {
		return false
	}
	t.mu.RLock()
	_, ok := t.workloads[[2]string{w.Cluster, w.UID}]
	t.mu.RUnlock()
	return !ok
}

// reset forgets every workload, before a full read of FINDINGS.
func (t *tally) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loaded.Store(false)
	t.g.Reset()
	clear(t.workloads)
	clear(t.children)
}
