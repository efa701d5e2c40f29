package collector

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/bomstream/bomstream/schemas"
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

// nsOf is the namespace a kind's objects are looked up in.
func (k linkKind) nsOf(ns string) string {
	if k.clusterScoped {
		return ""
	}
	return ns
}

// linked is one object a link found, and what it contributes.
type linked struct {
	kind, name string
	obj        map[string]any
	rule       *linkRule
}

// prefix is the start of the locators of what the object contributes:
// "ServingRuntime/kserve-vllm:".
func (l linked) prefix() string { return l.kind + "/" + l.name + ":" }

// resolveLinks finds the objects the links of a profile name or select.
func (w walker) resolveLinks(links []linkRule) ([]linked, error) {
	if w.lookup == nil {
		return nil, nil
	}
	var out []linked
	for i := range links {
		l := &links[i]
		if l.name != nil {
			name, ok, err := w.first(*l.name, nil)
			if err != nil {
				return nil, err
			}
			if ok && name != "" {
				for _, k := range l.kinds {
					if obj, found := w.lookup.Get(k.apiVersion, k.kind, k.nsOf(w.ns), name); found {
						out = append(out, linked{kind: k.kind, name: name, obj: obj, rule: l})
						break
					}
				}
				continue
			}
		}
		if l.sel != nil {
			if x, ok := w.selectLinked(l); ok {
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// selectLinked is the object a select rule picks, if any.
func (w walker) selectLinked(l *linkRule) (linked, bool) {
	// A kind with a match wins over every later kind (a namespace runtime
	// over any cluster runtime); within one, the highest priority, then the
	// first name.
	for _, k := range l.kinds {
		var best linked
		bestPrio, found := 0, false
		for _, obj := range w.lookup.List(k.apiVersion, k.kind, k.nsOf(w.ns)) {
			prio, ok := w.selects(l.sel, obj)
			if ok && (!found || prio > bestPrio) {
				best, bestPrio, found = linked{kind: k.kind, name: objName(obj), obj: obj, rule: l}, prio, true
			}
		}
		if found {
			return best, true
		}
	}
	return linked{}, false
}

// selects reports whether obj has an item that the select rule matches,
// and the highest priority of such an item.
func (w walker) selects(s *selectRule, obj map[string]any) (int, bool) {
	for _, ex := range s.exclude {
		if w.matches(ex, obj, nil) {
			return 0, false
		}
	}
	best, ok := 0, false
	for _, im := range s.items.walk(obj, nil) {
		items, _ := im.value().([]any)
		for _, item := range items {
			it, isMap := item.(map[string]any)
			if !isMap {
				continue
			}
			all := true
			for _, m := range s.match {
				if !w.matches(m, obj, it) {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			prio := 0
			if s.priority != nil {
				if v, found := scalarAt(*s.priority, it); found {
					fmt.Sscan(v, &prio)
				}
			}
			if !ok || prio > best {
				best, ok = prio, true
			}
		}
	}
	return best, ok
}

// matches evaluates one match rule on an item (or, for exclude, the
// linked object itself when item is nil).
func (w walker) matches(m matchRule, obj, item map[string]any) bool {
	var base any = obj
	if item != nil {
		base = item
	}
	got, found := scalarAt(m.path, base)
	if m.value == nil {
		return found && strings.EqualFold(got, m.equals)
	}
	want, ok, err := w.first(*m.value, nil)
	if err != nil || !ok || want == "" {
		return m.optional
	}
	return found && strings.EqualFold(got, want)
}

// scalarAt is the first scalar a relative path reaches in v, as a string.
func scalarAt(p path, v any) (string, bool) {
	for _, m := range p.walk(v, nil) {
		switch x := m.value().(type) {
		case string:
			return x, true
		case bool, int, int64, float64:
			return fmt.Sprint(x), true
		}
	}
	return "", false
}

func objName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// linkFields reads the fields the links of a workload contribute. Their
// locators name the linked object: "NIMCache/llama:spec.source.ngc.model.engine".
func (w walker) linkFields(ls []linked) ([]schemas.Field, error) {
	var out []schemas.Field
	for _, l := range ls {
		fs, err := w.foreign(l.kind, l.name, l.obj).fields(l.rule.fields, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, prefixFields(fs, l.prefix())...)
	}
	return out, nil
}

// linkContainers adds the containers the links contribute to the
// components they join.
func (w walker) linkContainers(ls []linked, comps []schemas.Component) error {
	for _, l := range ls {
		if len(l.rule.containers) == 0 {
			continue
		}
		lw := w.foreign(l.kind, l.name, l.obj)
		var got []schemas.Container
		for _, cr := range l.rule.containers {
			cs, err := lw.containers(cr, []step{{val: l.obj}})
			if err != nil {
				return err
			}
			got = append(got, cs...)
		}
		var repl []string
		for _, ph := range l.rule.placeholders {
			v, ok := scalarAt(ph.path, w.root)
			if !ok && ph.path.raw == "metadata.namespace" {
				// Written without one, the object is in the namespace
				// it was read in.
				v, ok = w.ns, w.ns != ""
			}
			if ok {
				repl = append(repl, ph.text, schemas.RedactText(v))
			}
		}
		fill := strings.NewReplacer(repl...)
		for i := range got {
			ct := &got[i]
			ct.Locator = l.prefix() + ct.Locator
			ct.Mounts = nil // of the linked object's volumes, not the pod's
			if len(repl) > 0 {
				ct.Command, ct.Args = fillAll(fill, ct.Command), fillAll(fill, ct.Args)
				for k := range ct.Env {
					ct.Env[k].Value = fill.Replace(ct.Env[k].Value)
				}
			}
		}
		for i := range comps {
			if comps[i].Name == l.rule.component {
				comps[i].Containers = append(comps[i].Containers, got...)
			}
		}
	}
	return nil
}

// boundFields reads the fields the objects bound to this one contribute:
// to the component named by the rule, or to the workload.
func (w walker) boundFields(rules []boundRule, name string, comps []schemas.Component) ([]schemas.Field, error) {
	if w.lookup == nil {
		return nil, nil
	}
	var out []schemas.Field
	for i := range rules {
		b := &rules[i]
		for _, obj := range w.lookup.List(b.kind.apiVersion, b.kind.kind, w.ns) {
			if !w.binds(b, obj, name) {
				continue
			}
			bn := objName(obj)
			fs, err := w.foreign(b.kind.kind, bn, obj).fields(b.fields, nil)
			if err != nil {
				return nil, err
			}
			fs = prefixFields(fs, b.kind.kind+"/"+bn+":")
			placed := false
			for ci := range comps {
				if b.component != "" && comps[ci].Name == b.component {
					comps[ci].Fields = sortFields(append(comps[ci].Fields, fs...))
					placed = true
				}
			}
			if !placed {
				out = append(out, fs...)
			}
		}
	}
	return out, nil
}

// binds reports whether obj is bound to the object named name.
func (w walker) binds(b *boundRule, obj map[string]any, name string) bool {
	if b.by != nil {
		if v, ok := scalarAt(*b.by, obj); ok && v != "" {
			return v == name
		}
	}
	r := b.requires
	if r == nil {
		return false
	}
	need := listAt(r.their, obj)
	if len(need) == 0 {
		return false
	}
	have := map[string]bool{}
	var caps []string
	if r.override != nil {
		caps = w.listOf(*r.override)
	}
	if len(caps) == 0 && r.by != nil {
		if v, ok, _ := w.first(*r.by, nil); ok {
			caps = r.defaults[strings.ToLower(v)]
		}
	}
	for _, e := range r.extra {
		caps = append(caps, w.listOf(e)...)
	}
	for _, c := range caps {
		have[strings.ToLower(strings.TrimSpace(c))] = true
	}
	for _, n := range need {
		if !have[strings.ToLower(strings.TrimSpace(n))] {
			return false
		}
	}
	return true
}

func (w walker) listOf(p path) []string { return listAt(p, w.root) }

// listAt is the strings a path reaches: the items of a list, or the parts
// of a comma-separated string.
func listAt(p path, v any) []string {
	var out []string
	for _, m := range p.walk(v, nil) {
		switch x := m.value().(type) {
		case string:
			for _, s := range strings.Split(x, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
		case []any:
			for _, it := range x {
				if s, ok := it.(string); ok && s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// foreign is a walker over another object, for what it contributes.
func (w walker) foreign(kind, name string, obj map[string]any) walker {
	return walker{n: w.n, id: kind + "/" + name, root: obj, ns: w.ns}
}

func prefixFields(fs []schemas.Field, prefix string) []schemas.Field {
	for i := range fs {
		fs[i].Locator = prefix + fs[i].Locator
	}
	return fs
}

// yamlFields reads the fields a YAML document held in a string gives:
// the scalars sub reaches in it. Their locators are the string's locator,
// a colon and the path inside the document. A value that is no document
// of maps and lists gives nothing.
func (w walker) yamlFields(r fieldRule, text, loc string) ([]schemas.Field, error) {
	const maxDocument = 1 << 20
	if text == "" || len(text) > maxDocument {
		return nil, nil
	}
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, nil
	}
	var out []schemas.Field
	for _, m := range r.yaml.walk(doc, nil) {
		v, ok, err := w.scalar(m.value(), loc+":"+m.locator())
		if err != nil || !ok {
			continue
		}
		out = append(out, schemas.Field{Name: r.name, Value: schemas.RedactText(v), Locator: loc + ":" + m.locator()})
	}
	return out, nil
}

// configMapFields reads what the ConfigMaps mounted by a pod (volumes and
// projected volumes) say about the models it serves: the LoRA adapters they
// list, as fields named loraAdapter.
func (w walker) configMapFields(volumes path, from []step) []schemas.Field {
	if w.lookup == nil {
		return nil
	}
	var names []string
	for _, vm := range volumes.walk(w.root, from) {
		items, _ := vm.value().([]any)
		for _, item := range items {
			v, _ := item.(map[string]any)
			if cm, ok := v["configMap"].(map[string]any); ok {
				if n, _ := cm["name"].(string); n != "" {
					names = append(names, n)
				}
			}
			proj, _ := v["projected"].(map[string]any)
			srcs, _ := proj["sources"].([]any)
			for _, s := range srcs {
				sm, _ := s.(map[string]any)
				if cm, ok := sm["configMap"].(map[string]any); ok {
					if n, _ := cm["name"].(string); n != "" {
						names = append(names, n)
					}
				}
			}
		}
	}
	var out []schemas.Field
	for _, name := range dedupe(names) {
		cm, ok := w.lookup.Get("v1", "ConfigMap", w.ns, name)
		if !ok {
			continue
		}
		data, _ := cm["data"].(map[string]any)
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			text, _ := data[k].(string)
			var doc any
			if text == "" || yaml.Unmarshal([]byte(text), &doc) != nil {
				continue
			}
			loc := joinKey("ConfigMap/"+name+":data", k)
			for _, a := range loraAdapters(doc, "", false) {
				out = append(out, schemas.Field{Name: "loraAdapter", Value: schemas.RedactText(a.value), Locator: loc + ":" + a.path})
			}
		}
	}
	return out
}

type adapterRef struct{ value, path string }

// loraAdapters finds the adapters a configuration document lists: the
// entries of a list under a key naming LoRA adapters (lora, adapters,
// loraAdapters, ensureExist.models of the LoRA syncer, lora_modules, ...),
// each a string or a map with a source, path, repo or model key.
func loraAdapters(v any, loc string, inList bool) []adapterRef {
	var out []adapterRef
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			lower := strings.ToLower(k)
			list := inList || strings.Contains(lower, "lora") || strings.Contains(lower, "adapter") || lower == "ensureexist"
			out = append(out, loraAdapters(x[k], joinKey(loc, k), list)...)
		}
	case []any:
		if !inList {
			for i, item := range x {
				out = append(out, loraAdapters(item, joinIndex(loc, i), false)...)
			}
			return out
		}
		for i, item := range x {
			iloc := joinIndex(loc, i)
			switch it := item.(type) {
			case string:
				val := it
				if _, p, ok := strings.Cut(it, "="); ok {
					val = p
				}
				if val != "" {
					out = append(out, adapterRef{value: val, path: iloc})
				}
			case map[string]any:
				for _, k := range []string{"source", "path", "lora_path", "repo", "model", "uri"} {
					if s, ok := it[k].(string); ok && s != "" {
						out = append(out, adapterRef{value: s, path: joinKey(iloc, k)})
						break
					}
				}
			}
		}
	}
	return out
}

func fillAll(r *strings.Replacer, ws []string) []string {
	if ws == nil {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = r.Replace(w)
	}
	return out
}
