package kube

import (
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// health is the state of every watched kind: whether its list and watch
// work, whether its probe works, whether its cache has synced. A kind is
// healthy when the last list or watch and the last probe succeeded. It
// feeds bomstream_watch_healthy{kind}, bomstream_watch_errors_total{kind}
// and Collector.Health.
type health struct {
	log     *zap.Logger
	healthy *prometheus.GaugeVec
	errors  *prometheus.CounterVec

	mu    sync.Mutex
	kinds map[string]*kindHealth
	// onChange is called (outside the lock) when a kind turns healthy.
	onHealthy func(kind string)
}

type kindHealth struct {
	listErr, probeErr error
	logged            map[string]string // verb -> error last logged
}

func newHealth(log *zap.Logger) *health {
	return &health{
		log: log,
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bomstream_watch_healthy",
			Help: "1 when the watch of a kind works (list, watch and the single-object probe), 0 when it is degraded.",
		}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bomstream_watch_errors_total",
			Help: "Failed list, watch and probe requests of a kind.",
		}, []string{"kind"}),
		kinds: map[string]*kindHealth{},
	}
}

func (h *health) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{h.healthy, h.errors} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("collector metrics: %w", err)
		}
	}
	return nil
}

// setOnHealthy sets the callback for kinds that recover.
func (h *health) setOnHealthy(f func(kind string)) {
	h.mu.Lock()
	h.onHealthy = f
	h.mu.Unlock()
}

// watched adds a kind, healthy until proven otherwise.
func (h *health) watched(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kinds[kind] == nil {
		h.kinds[kind] = &kindHealth{}
	}
	h.healthy.WithLabelValues(kind).Set(1)
}

// gone removes a kind that is no longer watched (its CRD went away).
func (h *health) gone(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.kinds, kind)
	h.healthy.DeleteLabelValues(kind)
}

// request records the outcome of a list or watch request. A forbidden one
// logs the permission that is missing, once per change of the error.
func (h *health) request(kind, verb, resource, group, namespace string, err error) {
	h.update(kind, func(k *kindHealth) (changed bool) {
		prev := k.listErr
		k.listErr = err
		if err == nil {
			if prev != nil {
				k.logged = nil
				h.log.Info("watch recovered", zap.String("kind", kind), zap.String("verb", verb))
			}
			return prev != nil
		}
		h.errors.WithLabelValues(kind).Inc()
		if k.logged == nil {
			k.logged = map[string]string{}
		}
		if k.logged[verb] == err.Error() {
			return false // logged once; the informer retries with backoff
		}
		k.logged[verb] = err.Error()
		fields := []zap.Field{zap.String("kind", kind), zap.String("verb", verb), zap.String("resource", resource),
			zap.String("group", group), zap.String("namespace", orAll(namespace)), zap.Error(err)}
		if apierrors.IsForbidden(err) {
			h.log.Error("watch degraded: permission missing; grant it in the collector's Role or ClusterRole", fields...)
		} else {
			h.log.Warn("watch degraded", fields...)
		}
		return false
	})
}

// probe records the outcome of the uncached single-object GET of a kind.
func (h *health) probe(kind string, err error) {
	h.update(kind, func(k *kindHealth) bool {
		prev := k.probeErr
		k.probeErr = err
		if err == nil {
			if prev != nil {
				h.log.Info("probe recovered", zap.String("kind", kind))
			}
			return prev != nil
		}
		h.errors.WithLabelValues(kind).Inc()
		if prev == nil || prev.Error() != err.Error() {
			h.log.Error("watch degraded: a single-object GET fails while list and watch may still be served from the API server's cache "+
				"(a conversion webhook down?)", zap.String("kind", kind), zap.Error(err))
		}
		return false
	})
}

func (h *health) update(kind string, f func(*kindHealth) bool) {
	h.mu.Lock()
	k := h.kinds[kind]
	if k == nil {
		h.mu.Unlock()
		return
	}
	recovered := f(k)
	ok := k.listErr == nil && k.probeErr == nil
	if ok {
		h.healthy.WithLabelValues(kind).Set(1)
	} else {
		h.healthy.WithLabelValues(kind).Set(0)
	}
	cb := h.onHealthy
	h.mu.Unlock()
	if recovered && ok && cb != nil {
		cb(kind)
	}
}

// ok reports whether kind is watched and healthy.
func (h *health) ok(kind string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.kinds[kind]
	return k != nil && k.listErr == nil && k.probeErr == nil
}

// report is every watched kind with its error, nil when healthy.
func (h *health) report() map[string]error {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]error, len(h.kinds))
	for name, k := range h.kinds {
		switch {
		case k.listErr != nil:
			out[name] = k.listErr
		case k.probeErr != nil:
			out[name] = fmt.Errorf("probe: %w", k.probeErr)
		default:
			out[name] = nil
		}
	}
	return out
}

// Degraded lists the kinds of a health report that are not healthy, sorted.
func Degraded(report map[string]error) []string {
	var out []string
	for k, err := range report {
		if err != nil {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func orAll(ns string) string {
	if ns == "" {
		return "(all namespaces)"
	}
	return ns
}
