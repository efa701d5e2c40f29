package collector

import (
	"fmt"
	"sort"
	"strings"
)

// Lookup lets the Normalizer see the objects a workload refers to, or that
// refer to it: the NIMCache a NIMService uses, the ConfigMaps its pods
// mount, the KServe runtime an InferenceService runs on, the Seldon Models
// loaded into a Server, the Rollout that takes over a Deployment. What they
// contribute is copied into the workload's Inputs (as fields, containers or
// components), so editing that object changes the workload's input hash.
// Secrets are never looked up.
//
// The manifest source implements it over the documents of one load
// (collector/files); the cluster source over what it watches
// (collector/kube).
type Lookup interface {
	// Get returns the object of apiVersion (only its group must match: "v1"
	// for the core group, "apps.nvidia.com/v1alpha1"), kind, namespace ("" for
	// a cluster-scoped kind) and name, and whether there is one. It must not
	// block on the network for long (a cache read), must be safe for
	// concurrent use, and the caller never modifies the returned map.
	Get(apiVersion, kind, namespace, name string) (map[string]any, bool)
	// List returns every object of apiVersion's group and kind in namespace
	// ("" for a cluster-scoped kind), sorted by name, under the same rules
	// as Get.
	List(apiVersion, kind, namespace string) []map[string]any
}

// linkSpec: another object this kind names (or selects), in its namespace
// or cluster-wide, and what it contributes: fields read from its root, and
// containers that join one of this kind's components (a KServe runtime's
// containers join the predictor that runs on it).
type linkSpec struct {
	APIVersion    string `yaml:"apiVersion"`
	Kind          string `yaml:"kind"`
	ClusterScoped bool   `yaml:"clusterScoped"`
	// Or are more kinds to try, in order, when the first has no such
	// object (a ClusterServingRuntime after a ServingRuntime).
	Or []linkKindSpec `yaml:"or"`
	// Name is the path (from this object's root) naming the object.
	Name string `yaml:"name"`
	// Select picks the object when Name finds no name.
	Select     *selectSpec     `yaml:"select"`
	Component  string          `yaml:"component"`
	Containers []containerSpec `yaml:"containers"`
	Fields     []fieldSpec     `yaml:"fields"`
	// Placeholders are filled in the linked containers' command, args and
	// env values with values of this object, as the operator does:
	// "{{.Name}}": metadata.name.
	Placeholders map[string]string `yaml:"placeholders"`
}

type linkKindSpec struct {
	APIVersion    string `yaml:"apiVersion"`
	Kind          string `yaml:"kind"`
	ClusterScoped bool   `yaml:"clusterScoped"`
}

// selectSpec picks, among the objects of the link's kinds, the one whose
// list Items has an item matching every Match, not excluded by Exclude:
// the item with the highest Priority wins, then the kinds in order, then
// the name. That is how KServe picks the runtime of a predictor that names
// only its model format.
type selectSpec struct {
	Items    string      `yaml:"items"`
	Match    []matchSpec `yaml:"match"`
	Exclude  []matchSpec `yaml:"exclude"`
	Priority string      `yaml:"priority"`
}

// matchSpec compares a value of the item (Path) with a literal (Equals) or
// with a value of this object (Value, a path from its root). Case is
// ignored. Optional: when this object has no such value, it matches.
type matchSpec struct {
	Path     string `yaml:"path"`
	Equals   string `yaml:"equals"`
	Value    string `yaml:"value"`
	Optional bool   `yaml:"optional"`
}

// boundSpec: objects that name this one (a Seldon Model's spec.server
// names its Server), or that its capabilities can run (a Model with no
// server, whose requirements the Server's capabilities cover). Each bound
// object's Fields join the component named Component, or the workload.
type boundSpec struct {
	APIVersion string        `yaml:"apiVersion"`
	Kind       string        `yaml:"kind"`
	By         string        `yaml:"by"`
	Requires   *requiresSpec `yaml:"requires"`
	Component  string        `yaml:"component"`
	Fields     []fieldSpec   `yaml:"fields"`
}

// requiresSpec: a bound object that names no one (By is empty) is bound
// when every item of its list Their is among this object's capabilities:
// those of Override when set, else Defaults by the value of a path, plus
// those of Extra. Items are compared without case; a string list may be
// comma-separated.
type requiresSpec struct {
	Their    string              `yaml:"their"`
	Override string              `yaml:"override"`
	Extra    []string            `yaml:"extra"`
	Defaults map[string][]string `yaml:"defaults"`
	By       string              `yaml:"defaultsBy"`
}

// claimSpec: an object this one takes over (an Argo Rollout's
// spec.workloadRef names the Deployment whose pod template it runs). The
// claimed object is part of this workload: its components, as its own
// profile reads them, join this workload's, and it has no BOM of its own.
type claimSpec struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Name       string `yaml:"name"`
	// KindPath, when set, must hold Kind (spec.workloadRef.kind).
	KindPath string `yaml:"kindPath"`
}

type linkKind struct {
	apiVersion, kind string
	clusterScoped    bool
}

type linkRule struct {
	kinds        []linkKind
	name         *path
	sel          *selectRule
	component    string
	containers   []containerRule
	fields       []fieldRule
	placeholders []placeholder
}

type placeholder struct {
	text string
	path path
}

type selectRule struct {
	items    path
	match    []matchRule
	exclude  []matchRule
	priority *path
}

type matchRule struct {
	path     path
	equals   string
	value    *path
	optional bool
}

type boundRule struct {
	kind      linkKind
	by        *path
	requires  *requiresRule
	component string
	fields    []fieldRule
}

type requiresRule struct {
	their    path
	override *path
	extra    []path
	by       *path
	defaults map[string][]string
}

type claimRule struct {
	kind     linkKind
	name     path
	kindPath *path
}

// compileLink checks a link of a profile and compiles its paths.
func compileLink(ls linkSpec) (linkRule, error) {
	var l linkRule
	if ls.APIVersion == "" || ls.Kind == "" {
		return l, fmt.Errorf("kind: apiVersion and kind are required")
	}
	l.kinds = append(l.kinds, linkKind{ls.APIVersion, ls.Kind, ls.ClusterScoped})
	for i, o := range ls.Or {
		if o.APIVersion == "" || o.Kind == "" {
			return l, fmt.Errorf("or[%d]: apiVersion and kind are required", i)
		}
		l.kinds = append(l.kinds, linkKind{o.APIVersion, o.Kind, o.ClusterScoped})
	}
	var err error
	if l.name, err = optionalPath("name", ls.Name); err != nil {
		return l, err
	}
	if ls.Select != nil {
		if l.sel, err = compileSelect(*ls.Select); err != nil {
			return l, fmt.Errorf("select.%w", err)
		}
	}
	if l.name == nil && l.sel == nil {
		return l, fmt.Errorf("name: set name, select or both")
	}
	if len(ls.Containers) > 0 && ls.Component == "" {
		return l, fmt.Errorf("component: containers need the component they join")
	}
	l.component = ls.Component
	for i, cs := range ls.Containers {
		c, err := compileContainer(cs)
		if err != nil {
			return l, fmt.Errorf("containers[%d].%w", i, err)
		}
		l.containers = append(l.containers, c)
	}
	if l.fields, err = compileFields("fields", ls.Fields); err != nil {
		return l, err
	}
	for text, raw := range ls.Placeholders {
		p, err := compilePath(raw)
		if err != nil {
			return l, fmt.Errorf("placeholders[%s]: %w", text, err)
		}
		l.placeholders = append(l.placeholders, placeholder{text: text, path: p})
	}
	sort.Slice(l.placeholders, func(i, j int) bool { return l.placeholders[i].text < l.placeholders[j].text })
	return l, nil
}

// compileSelect checks a link's select and compiles its paths.
func compileSelect(ss selectSpec) (*selectRule, error) {
	items, err := compilePath(ss.Items)
	if err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	s := &selectRule{items: items}
	if s.priority, err = optionalPath("priority", ss.Priority); err != nil {
		return nil, err
	}
	compile := func(where string, ms []matchSpec) ([]matchRule, error) {
		var out []matchRule
		for i, m := range ms {
			p, err := compilePath(m.Path)
			if err != nil {
				return nil, fmt.Errorf("%s[%d].path: %w", where, i, err)
			}
			r := matchRule{path: p, equals: m.Equals, optional: m.Optional}
			if r.value, err = optionalPath(fmt.Sprintf("%s[%d].value", where, i), m.Value); err != nil {
				return nil, err
			}
			if (r.value == nil) == (m.Equals == "") {
				return nil, fmt.Errorf("%s[%d]: set exactly one of equals, value", where, i)
			}
			out = append(out, r)
		}
		return out, nil
	}
	if s.match, err = compile("match", ss.Match); err != nil {
		return nil, err
	}
	if s.exclude, err = compile("exclude", ss.Exclude); err != nil {
		return nil, err
	}
	if len(s.match) == 0 {
		return nil, fmt.Errorf("match: at least one is needed")
	}
	return s, nil
}

// compileBound checks a bound rule of a profile and compiles its paths.
func compileBound(bs boundSpec) (boundRule, error) {
	b := boundRule{kind: linkKind{apiVersion: bs.APIVersion, kind: bs.Kind}, component: bs.Component}
	if bs.APIVersion == "" || bs.Kind == "" {
		return b, fmt.Errorf("kind: apiVersion and kind are required")
	}
	var err error
	if b.by, err = optionalPath("by", bs.By); err != nil {
		return b, err
	}
	if rq := bs.Requires; rq != nil {
		r := &requiresRule{defaults: map[string][]string{}}
		if r.their, err = compilePath(rq.Their); err != nil {
			return b, fmt.Errorf("requires.their: %w", err)
		}
		if r.override, err = optionalPath("requires.override", rq.Override); err != nil {
			return b, err
		}
		if r.by, err = optionalPath("requires.defaultsBy", rq.By); err != nil {
			return b, err
		}
		for i, e := range rq.Extra {
			p, err := compilePath(e)
			if err != nil {
				return b, fmt.Errorf("requires.extra[%d]: %w", i, err)
			}
			r.extra = append(r.extra, p)
		}
		for k, v := range rq.Defaults {
			r.defaults[strings.ToLower(k)] = v
		}
		b.requires = r
	}
	if b.by == nil && b.requires == nil {
		return b, fmt.Errorf("by: set by, requires or both")
	}
	if b.fields, err = compileFields("fields", bs.Fields); err != nil {
		return b, err
	}
	if len(b.fields) == 0 {
		return b, fmt.Errorf("fields: a bound object must contribute a field")
	}
	return b, nil
}

// compileClaim checks a claim of a profile and compiles its paths.
func compileClaim(cs claimSpec) (claimRule, error) {
	c := claimRule{kind: linkKind{apiVersion: cs.APIVersion, kind: cs.Kind}}
	if cs.APIVersion == "" || cs.Kind == "" {
		return c, fmt.Errorf("kind: apiVersion and kind are required")
	}
	var err error
	if c.name, err = compilePath(cs.Name); err != nil {
		return c, fmt.Errorf("name: %w", err)
	}
	if c.kindPath, err = optionalPath("kindPath", cs.KindPath); err != nil {
		return c, err
	}
	return c, nil
}

// gk is the group and kind of k.
func (k linkKind) gk() gk {
	g, _ := splitAPIVersion(k.apiVersion)
	return gk{g, k.kind}
}

// nsOf is the namespace a kind's objects are looked up in.
func (k linkKind) nsOf(ns string) string {
	if k.clusterScoped {
		return ""
	}
	return ns
}
