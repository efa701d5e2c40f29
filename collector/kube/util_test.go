package kube_test

import (
	"encoding/base64"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"
)

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func runtimeRaw(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }

func mustYAML(v any) string {
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// gaugeValue reads one labelled sample (first label value) of a metric.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					if g := m.GetGauge(); g != nil {
						return g.GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no sample %s{%s}", name, label)
	return 0
}

// requestCount reads bomstream_kube_requests_total{verb,resource}: the API
// requests of one collector (0 when there was none).
func requestCount(t *testing.T, reg *prometheus.Registry, verb, resource string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bomstream_kube_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["verb"] == verb && l["resource"] == resource {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// gauge reads a metric without labels.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
