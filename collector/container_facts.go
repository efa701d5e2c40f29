package collector

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// What a container says about serving besides its command line: the ports
// it declares, the paths its HTTP probes ask (/v1/models, /health,
// /v2/health/ready), and the accelerators it runs on: the extended
// resources it requests or limits, the dynamic resource claims it uses,
// and the keys of its pod's nodeSelector that name an accelerator
// ("node:cloud.google.com/gke-accelerator"). Quantities, replica counts
// and label values are never inputs: a scaled GPU count moves nothing.

// builtinAcceleratorLabels are the node label keys that name an
// accelerator, as cloud providers, node feature discovery and Karpenter
// set them.
func builtinAcceleratorLabels() []string {
	return []string{
		"cloud.google.com/gke-accelerator", "cloud.google.com/gke-tpu-accelerator",
		"cloud.google.com/gke-tpu-topology", "nvidia.com/gpu.product", "nvidia.com/gpu.family",
		"nvidia.com/gpu.present", "karpenter.k8s.aws/instance-gpu-name",
		"karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-accelerator-name",
		"karpenter.k8s.aws/instance-accelerator-manufacturer", "k8s.amazonaws.com/accelerator",
		"kubernetes.azure.com/accelerator", "amd.com/gpu.product-name", "amd.com/gpu.family",
		"intel.feature.node.kubernetes.io/gpu",
	}
}

// probeKinds are the probes read, in the order they are listed.
var probeKinds = []struct{ key, kind string }{
	{"readinessProbe", "readiness"}, {"livenessProbe", "liveness"}, {"startupProbe", "startup"},
}

// ports reads a container's declared ports. A port that is not a number
// in range (a template placeholder) is left out.
func (w walker) ports(v any, loc string) ([]schemas.Port, error) {
	items, ok := v.([]any)
	if !ok {
		if v != nil {
			return nil, w.errorf(loc, "expected a list of ports, found %s", describe(v))
		}
		return nil, nil
	}
	var out []schemas.Port
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			continue
		}
		iloc := joinIndex(loc, i)
		num, _, err := w.scalar(obj["containerPort"], iloc+".containerPort")
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 32)
		if err != nil || n < 0 || n > 65535 {
			continue
		}
		name, _, err := w.scalar(obj["name"], iloc+".name")
		if err != nil {
			return nil, err
		}
		out = append(out, schemas.Port{Name: schemas.RedactText(name), Port: int32(n)})
	}
	return out, nil
}

// probes reads the HTTP probes of a container object: readiness, liveness,
// startup, each with its path and port as written.
func (w walker) probes(obj map[string]any, loc string) ([]schemas.Probe, error) {
	var out []schemas.Probe
	for _, pk := range probeKinds {
		pr, _ := obj[pk.key].(map[string]any)
		hg, ok := pr["httpGet"].(map[string]any)
		if !ok {
			continue
		}
		hloc := loc + "." + pk.key + ".httpGet"
		p, _, err := w.scalar(hg["path"], hloc+".path")
		if err != nil {
			return nil, err
		}
		port, _, err := w.scalar(hg["port"], hloc+".port")
		if err != nil {
			return nil, err
		}
		out = append(out, schemas.Probe{Kind: pk.kind, Path: schemas.RedactText(p), Port: schemas.RedactText(port)})
	}
	return out, nil
}

// resourceNames are the accelerators a ResourceRequirements map names:
// the extended resources of its requests and limits whose quantity is not
// zero, and "claim:<name>" for each of its claims.
func resourceNames(v any) []string {
	res, _ := v.(map[string]any)
	var out []string
	for _, k := range []string{"requests", "limits"} {
		out = append(out, extendedResources(res[k])...)
	}
	claims, _ := res["claims"].([]any)
	for _, c := range claims {
		cm, _ := c.(map[string]any)
		if name, _ := cm["name"].(string); name != "" {
			out = append(out, "claim:"+name)
		}
	}
	return out
}

// extendedResources are the keys of a map of resource quantities that
// name extended resources (not cpu, memory, storage or hugepages) with a
// quantity other than zero.
func extendedResources(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if nativeResource(k) || zeroQuantity(m[k]) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// nativeResource reports a resource Kubernetes itself accounts for.
func nativeResource(name string) bool {
	switch name {
	case "cpu", "memory", "ephemeral-storage", "storage", "pods":
		return true
	}
	return strings.HasPrefix(name, "hugepages-")
}

// zeroQuantity reports a quantity that requests nothing ("0", 0).
func zeroQuantity(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case int:
		return x == 0
	case int64:
		return x == 0
	case float64:
		return x == 0
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return err == nil && f == 0
	}
	return false
}

// ruleAccelerators are the accelerators a container rule's resources and
// short forms give the containers it reads (a Dynamo service's
// resources.limits.gpu, a NIMService's spec.resources), from the
// component at from.
func (w walker) ruleAccelerators(r containerRule, from []step) []string {
	var out []string
	if r.resources != nil {
		for _, m := range r.resources.walk(w.root, from) {
			out = append(out, resourceNames(m.value())...)
		}
	}
	for _, a := range r.accelerators {
		if a.keys != nil {
			for _, m := range a.keys.walk(w.root, from) {
				out = append(out, extendedResources(m.value())...)
			}
			continue
		}
		for _, m := range a.path.walk(w.root, from) {
			if zeroQuantity(m.value()) {
				continue
			}
			name := a.name
			if a.nameFrom != nil {
				if v, ok, err := w.first(*a.nameFrom, from); err == nil && ok && v != "" {
					name = v
				}
			}
			out = append(out, name)
			break
		}
	}
	return out
}

// nodeAccelerators are "node:<key>" for the keys of the pod's nodeSelector
// (at the component rule's paths) that name an accelerator.
func (w walker) nodeAccelerators(cr componentRule, from []step) []string {
	var out []string
	for _, p := range cr.nodeSelector {
		for _, m := range p.walk(w.root, from) {
			sel, _ := m.value().(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(sel)) {
				if w.n.acceleratorLabels[k] {
					out = append(out, "node:"+k)
				}
			}
		}
	}
	return out
}

// addAccelerators adds names to a container's accelerators, which stay
// sorted and without repeats, each through RedactText.
func addAccelerators(c *schemas.Container, names []string) {
	if len(names) == 0 {
		return
	}
	for _, n := range names {
		c.Accelerators = append(c.Accelerators, schemas.RedactText(n))
	}
	slices.Sort(c.Accelerators)
	c.Accelerators = slices.Compact(c.Accelerators)
}
