package collector

import (
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

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

// listOf is listAt on the workload's own object.
func (w walker) listOf(p path) []string { return listAt(p, w.root) }

// listAt is the strings a path reaches: the items of a list, or the parts
// of a comma-separated string.
func listAt(p path, v any) []string {
	var out []string
	for _, m := range p.walk(v, nil) {
		switch x := m.value().(type) {
		case string:
			for s := range strings.SplitSeq(x, ",") {
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
