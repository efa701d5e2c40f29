package gcs

import (
	"fmt"
	"slices"
	"strings"
)

// template is a parsed path template: literal text and fields, split at
// the last slash into the workload's folder and the BOM's file. Both
// forms of a template parse to the same parts, so they name the same
// objects.
type template struct {
	dir, file []part
	// old says the template was written in the old form ({cluster}).
	old bool
}

type part struct {
	lit string // literal text, when key is ""
	key string // a field, by its old name: "cluster", "bomHash"
}

// fields maps the old names of the fields to their Go template names.
var fields = map[string]string{
	"prefix": "Prefix", "cluster": "Cluster", "namespace": "Namespace", "kind": "Kind",
	"name": "Name", "uid": "UID", "bomHash": "BOMHash",
}

// field is how a template written in the old form (old) or the new names
// the field key, in messages.
func field(key string, old bool) string {
	if old {
		return "{" + key + "}"
	}
	return "{{ ." + fields[key] + " }}"
}

// knownFields lists the fields in the form of the template, for messages.
func knownFields(old bool) string {
	var out []string
	for k := range fields {
		out = append(out, field(k, old))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func parseTemplate(s string) (template, error) {
	old := !strings.Contains(s, "{{") && strings.Contains(s, "{")
	f := func(key string) string { return field(key, old) }
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return template{}, fmt.Errorf("%q has no folder: the workload's latest and tombstone objects need one", s)
	}
	if strings.HasPrefix(s, "/") {
		return template{}, fmt.Errorf("%q starts with a slash", s)
	}
	dir, err := parseParts(s[:i], old)
	if err != nil {
		return template{}, fmt.Errorf("%q: %w", s, err)
	}
	file, err := parseParts(s[i+1:], old)
	if err != nil {
		return template{}, fmt.Errorf("%q: %w", s, err)
	}
	has := func(ps []part, key string) bool {
		return slices.ContainsFunc(ps, func(p part) bool { return p.key == key })
	}
	if !has(file, "bomHash") {
		return template{}, fmt.Errorf("%q: the last segment must hold %s, so that distinct BOMs are distinct objects", s, f("bomHash"))
	}
	if has(dir, "bomHash") {
		return template{}, fmt.Errorf("%q: %s may only appear in the last segment", s, f("bomHash"))
	}
	if !has(dir, "uid") {
		for _, k := range []string{"cluster", "namespace", "kind", "name"} {
			if !has(dir, k) {
				return template{}, fmt.Errorf("%q: the folder part lacks %s: two workloads would share a latest object (use %s, %s, %s and %s, or %s)",
					s, f(k), f("cluster"), f("namespace"), f("kind"), f("name"), f("uid"))
			}
		}
	}
	return template{dir: dir, file: file, old: old}, nil
}

// parseParts reads literal text and fields: {{ .Cluster }}, or {cluster}
// when old.
func parseParts(s string, old bool) ([]part, error) {
	lb, rb := "{{", "}}"
	if old {
		lb, rb = "{", "}"
	}
	var out []part
	for s != "" {
		i := strings.Index(s, lb)
		if i < 0 {
			out = append(out, part{lit: s})
			break
		}
		if i > 0 {
			out = append(out, part{lit: s[:i]})
		}
		j := strings.Index(s[i:], rb)
		if j < 0 {
			return nil, fmt.Errorf("unclosed %s", lb)
		}
		key, err := fieldKey(s[i+len(lb):i+j], old)
		if err != nil {
			return nil, err
		}
		out = append(out, part{key: key})
		s = s[i+j+len(rb):]
	}
	for _, p := range out {
		if strings.ContainsAny(p.lit, "{}\r\n\x00") {
			return nil, fmt.Errorf("stray { or } or a line break or NUL in %q", p.lit)
		}
	}
	return out, nil
}

// fieldKey is the field that the text between the braces names.
func fieldKey(text string, old bool) (string, error) {
	if old {
		if _, ok := fields[text]; !ok {
			return "", fmt.Errorf("unknown placeholder {%s} (known: %s)", text, knownFields(true))
		}
		return text, nil
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(text), ".")
	for k, v := range fields {
		if ok && v == name {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown field {{%s}} (known: %s; nothing else goes between the braces)", text, knownFields(false))
}

// newForm is the template t written in the new form.
func (t template) newForm() string {
	var b strings.Builder
	for i, ps := range [][]part{t.dir, t.file} {
		if i == 1 {
			b.WriteByte('/')
		}
		for _, p := range ps {
			if p.key == "" {
				b.WriteString(p.lit)
			} else {
				b.WriteString(field(p.key, false))
			}
		}
	}
	return b.String()
}

// perWorkload reports whether the folder is named by the workload's uid:
// a folder per workload rather than per name.
func (t template) perWorkload() bool {
	for _, p := range t.dir {
		if p.key == "uid" {
			return true
		}
	}
	return false
}

// render fills ps with vals. Empty segments (an empty prefix) are dropped.
func render(ps []part, vals map[string]string) string {
	var b strings.Builder
	for _, p := range ps {
		if p.key == "" {
			b.WriteString(p.lit)
		} else {
			b.WriteString(vals[p.key])
		}
	}
	segs := strings.Split(b.String(), "/")
	kept := segs[:0]
	for _, s := range segs {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, "/")
}
