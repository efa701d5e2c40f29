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

// objName is the metadata.name of an object.
func objName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}
