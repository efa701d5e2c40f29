package collector

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bomstream/bomstream/schemas"
)

// The generic profile: no serving pod is left out of the inventory because
// its operator is unknown.
//
// In manifests, an object of a kind no profile describes (or of a version
// its profile does not read) is read by its shape: every PodSpec-shaped map
// it holds (a map with a list of containers that have images:
// spec.template.spec, spec.podSpec, spec.workers[0].template.spec, ...) is
// a component. In a cluster, the owner is not read at all: the workload is
// the top-most owner the pods' owner references name, and its components
// are those of the objects it controls that the collector watches
// (Deployments, pods, ...); see Normalizer.Generic.

// Generic search limits: how deep a PodSpec may sit, how many an object
// may hold.
const (
	maxGenericDepth = 10
	maxGenericSpecs = 64
)

// genericRoles are the names of list items holding a pod template that
// say the template's role.
var genericRoles = map[string]bool{
	"prefill": true, "decode": true, "leader": true, "worker": true, "router": true,
	"frontend": true, "head": true, "encode": true,
}

// podTemplateWords are the path segments that name no component.
var podTemplateWords = map[string]bool{
	"spec": true, "template": true, "podSpec": true, "podTemplate": true,
	"jobTemplate": true, "pod": true, "podTemplateSpec": true,
}

// genericProfile is a profile for an object of no known kind built from
// the PodSpec-shaped maps it holds; nil when it holds none.
func genericProfile(obj map[string]any, group, kind string) *profile {
	var specs []genericSpec
	findPodSpecs(obj, nil, 0, "", &specs)
	if len(specs) == 0 {
		return nil
	}
	p := &profile{group: group, kind: kind, workload: true, owner: true, versions: map[string]bool{}}
	name := objName(obj)
	for _, s := range specs {
		cname := s.name
		if cname == "" {
			cname = name
		}
		raw := strings.Join(s.path, ".")
		cs := componentSpec{
			Path: raw, Name: cname, Volumes: "volumes", NodeSelector: []string{"nodeSelector"},
			Containers: []containerSpec{{List: "containers"}, {List: "initContainers", Init: true}},
		}
		if genericRoles[strings.ToLower(s.name)] {
			// A pod template in a list item named after a role (an
			// AIBrix StormService's roles: [{name: prefill, ...}]).
			cs.Roles = []string{strings.ToLower(s.name)}
		}
		if len(s.path) >= 2 && s.path[len(s.path)-1] == "spec" {
			cs.Labels = "../metadata.labels"
		}
		c, err := compileComponent(cs)
		if err != nil {
			continue // a path the syntax cannot write: not read
		}
		p.components = append(p.components, c)
	}
	if len(p.components) == 0 {
		return nil
	}
	return p
}

type genericSpec struct {
	path []string
	name string
}

// findPodSpecs collects, in document order (sorted keys), the PodSpec-shaped
// maps under v, not looking into one it found, nor into metadata or status.
// A spec inside a list item with a name takes that name (hint).
func findPodSpecs(v any, at []string, depth int, hint string, out *[]genericSpec) {
	if depth > maxGenericDepth || len(*out) >= maxGenericSpecs {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if depth > 0 && podSpecShaped(x) {
			name := hint
			if name == "" {
				name = genericName(at)
			}
			*out = append(*out, genericSpec{path: slices.Clone(at), name: name})
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if depth == 0 && (k == "metadata" || k == "status") {
				continue
			}
			if plainKey(k) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			findPodSpecs(x[k], append(at, k), depth+1, hint, out)
		}
	case []any:
		for i, item := range x {
			h := hint
			if m, ok := item.(map[string]any); ok {
				if name, _ := m["name"].(string); name != "" && plainKey(name) {
					h = name
				}
			}
			findPodSpecs(item, append(at, strconv.Itoa(i)), depth+1, h, out)
		}
	}
}

// podSpecShaped: a map with a non-empty list "containers" of maps that
// each have an "image" or a "name".
func podSpecShaped(m map[string]any) bool {
	cs, ok := m["containers"].([]any)
	if !ok || len(cs) == 0 {
		return false
	}
	for _, c := range cs {
		cm, ok := c.(map[string]any)
		if !ok {
			return false
		}
		if _, img := cm["image"]; !img {
			if _, named := cm["name"]; !named {
				return false
			}
		}
	}
	return true
}

// genericName names a component after the last segment of its path that
// is not a pod-template word; "" when there is none (the object's name is
// used).
func genericName(at []string) string {
	for i, s := range slices.Backward(at) {

		if podTemplateWords[s] {
			continue
		}
		if _, err := strconv.Atoi(s); err == nil {
			if i > 0 {
				return at[i-1] + "-" + s
			}
			return "item-" + s
		}
		return s
	}
	return ""
}

// Generic composes the Inputs of a workload of a kind no profile describes,
// in a cluster, from the Inputs of the objects it controls (children),
// which their own profiles read: a Deployment's pod template, a pod's spec.
// The owner itself is never read: its identity comes from the children's
// owner references. A child's components keep their names and their
// locators start with "<Kind>/<name>:"; a pod's components are named
// "pod" and start with "Pod:", and pods with the same spec count once, so
// that scaling and re-created pods change nothing. The result is bounded
// like any Inputs and marked ProfileGeneric.
func (n *Normalizer) Generic(owner schemas.Workload, children []*schemas.Inputs) *schemas.Inputs {
	in := &schemas.Inputs{Workload: owner, Components: []schemas.Component{}, Source: "cluster", Profile: schemas.ProfileGeneric}
	sorted := slices.DeleteFunc(slices.Clone(children), func(c *schemas.Inputs) bool { return c == nil })
	slices.SortFunc(sorted, func(a, b *schemas.Inputs) int {
		if c := strings.Compare(a.Workload.Kind, b.Workload.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Workload.Name, b.Workload.Name)
	})
	type podComp struct {
		c   schemas.Component
		key string
	}
	var pods []podComp
	seen := map[string]bool{}
	for _, ch := range sorted {
		if ch.Workload.Kind == "Pod" && groupOfAPIVersion(ch.Workload.APIVersion) == "" {
			for _, c := range cloneComponents(ch.Components) {
				prefixComponent(&c, "Pod:")
				c.Name = "pod"
				b, _ := schemas.CanonicalJSON(c)
				key := string(b)
				if !seen[key] {
					seen[key] = true
					pods = append(pods, podComp{c: c, key: key})
				}
			}
			continue
		}
		pre := ch.Workload.Kind + "/" + ch.Workload.Name + ":"
		for _, c := range cloneComponents(ch.Components) {
			prefixComponent(&c, pre)
			in.Components = append(in.Components, c)
		}
		in.Fields = append(in.Fields, prefixFields(slices.Clone(ch.Fields), pre)...)
	}
	slices.SortFunc(pods, func(a, b podComp) int { return strings.Compare(a.key, b.key) })
	for _, p := range pods {
		if len(pods) > 1 {
			sum := sha256.Sum256([]byte(p.key))
			p.c.Name = "pod-" + hex.EncodeToString(sum[:4])
		}
		in.Components = append(in.Components, p.c)
	}
	in.Fields = sortFields(in.Fields)
	in.Digests = pinnedDigests(in.Components)
	n.cfg.Bounds.bound(in)
	return in
}

func groupOfAPIVersion(apiVersion string) string {
	g, _ := splitAPIVersion(apiVersion)
	return g
}

// cloneComponents copies components deeply enough that their locators,
// names, fields and containers can be changed without touching cs.
func cloneComponents(cs []schemas.Component) []schemas.Component {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Containers = slices.Clone(out[i].Containers)
		out[i].Fields = slices.Clone(out[i].Fields)
		out[i].Volumes = slices.Clone(out[i].Volumes)
		out[i].Roles = slices.Clone(out[i].Roles)
	}
	return out
}

// prefixComponent starts every locator of c with prefix.
func prefixComponent(c *schemas.Component, prefix string) {
	c.Locator = prefix + c.Locator
	for k := range c.Containers {
		c.Containers[k].Locator = prefix + c.Containers[k].Locator
	}
	for k := range c.Fields {
		c.Fields[k].Locator = prefix + c.Fields[k].Locator
	}
	for k := range c.Volumes {
		c.Volumes[k].Locator = prefix + c.Volumes[k].Locator
	}
}

// NewGenericGauge is bomstream_generic_workloads{kind}: how many workloads
// of each kind no profile describes a source reports through the generic
// profile (the kind as Kind.String names it). Each source sets it after a
// pass with SetGeneric.
func NewGenericGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "bomstream_generic_workloads",
		Help: "Workloads of kinds no profile describes, read by the generic profile (their pod templates, or the pods they own), by kind.",
	}, []string{"kind"})
}

// SetGeneric sets g to the count, by kind, of the generic workloads among
// events.
func SetGeneric(g *prometheus.GaugeVec, events []schemas.WorkloadChange) {
	counts := map[string]int{}
	for _, ev := range events {
		if in := ev.Data.Inputs; in != nil && in.Profile == schemas.ProfileGeneric {
			counts[Kind{Group: groupOfAPIVersion(in.Workload.APIVersion), Kind: in.Workload.Kind}.String()]++
		}
	}
	g.Reset()
	for k, n := range counts {
		g.WithLabelValues(k).Set(float64(n))
	}
}
