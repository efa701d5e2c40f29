package collector

import (
	"fmt"
	"strings"
)

// linked is one object a link found, and what it contributes.
type linked struct {
	kind, name string
	obj        map[string]any
	rule       *linkRule
}

// configMap reports a link to a ConfigMap by name: ConfigMaps are read
// apart (configmap.go), in every source.
func (l *linkRule) configMap() bool {
	k := l.kinds[0]
	return k.gk() == gk{"", "ConfigMap"} && l.name != nil
}

// prefix is the start of the locators of what the object contributes:
// "ServingRuntime/kserve-vllm:".
func (l linked) prefix() string { return l.kind + "/" + l.name + ":" }

// resolveLinks finds the objects the links of a profile name or select.
func (w walker) resolveLinks(links []linkRule) ([]linked, error) {
	var out []linked
	for i := range links {
		l := &links[i]
		if l.configMap() {
			// Read by Complete, by name, as every ConfigMap is.
			if name, ok, err := w.first(*l.name, nil); err != nil {
				return nil, err
			} else if ok && name != "" && w.uses != nil {
				w.uses.links = append(w.uses.links, linkUse{rule: l, name: name})
			}
			continue
		}
		if w.lookup == nil {
			continue
		}
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
	// What this object's values are is read once, not for every item of
	// every object.
	match, exclude := w.wants(l.sel.match), w.wants(l.sel.exclude)
	// A kind with a match wins over every later kind (a namespace runtime
	// over any cluster runtime); within one, the highest priority, then the
	// first name.
	for _, k := range l.kinds {
		var best linked
		bestPrio, found := 0, false
		for _, obj := range w.lookup.List(k.apiVersion, k.kind, k.nsOf(w.ns)) {
			prio, ok := selects(l.sel, match, exclude, obj)
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

// wants is, for each match rule, the value it compares with: its literal,
// or the value of this object its path reaches ("" when there is none).
func (w walker) wants(ms []matchRule) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		if m.value == nil {
			out[i] = m.equals
			continue
		}
		if v, ok, err := w.first(*m.value, nil); err == nil && ok {
			out[i] = v
		}
	}
	return out
}

// selects reports whether obj has an item that the select rule matches,
// and the highest priority of such an item. match and exclude are the
// wants of the rule's match and exclude rules.
func selects(s *selectRule, match, exclude []string, obj map[string]any) (int, bool) {
	for i, ex := range s.exclude {
		if matches(ex, exclude[i], obj) {
			return 0, false
		}
	}
	best, ok := 0, false
	for _, im := range s.items.walk(obj, nil) {
		items, _ := im.value().([]any)
		for _, item := range items {
			it, isMap := item.(map[string]any)
			if !isMap || !matchesAll(s.match, match, it) {
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

// matchesAll reports whether every match rule matches item.
func matchesAll(ms []matchRule, wants []string, item map[string]any) bool {
	for i, m := range ms {
		if !matches(m, wants[i], item) {
			return false
		}
	}
	return true
}

// matches evaluates one match rule, whose want is what it compares with,
// on an item (or, for exclude, the linked object itself). A rule whose
// value this object does not have matches when it is optional.
func matches(m matchRule, want string, base map[string]any) bool {
	if want == "" {
		return m.optional
	}
	got, found := scalarAt(m.path, base)
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

// objName is the metadata.name of an object.
func objName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}
