package collector

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/bomstream/bomstream/schemas"
)

// walker normalizes the parts of one object.
type walker struct {
	n      *Normalizer
	id     string
	root   map[string]any
	lookup Lookup // nil: no other objects are seen
	ns     string // the workload's namespace, where links are looked up
	// uses notes what the object takes from ConfigMaps (nil: a walker
	// over another object, whose ConfigMaps are not read).
	uses *configMapUses
}

// errorf is an error naming the object and the locator loc.
func (w walker) errorf(loc, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", w.id, loc, fmt.Sprintf(format, args...))
}

// scalar converts a scalar to its string form; ok is false for null. A map
// or list is an error naming loc.
func (w walker) scalar(v any, loc string) (string, bool, error) {
	switch x := v.(type) {
	case nil:
		return "", false, nil
	case string:
		return x, true, nil
	case bool:
		return strconv.FormatBool(x), true, nil
	case int64:
		return strconv.FormatInt(x, 10), true, nil
	case int:
		return strconv.Itoa(x), true, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), true, nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true, nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true, nil
	case map[string]any:
		return "", false, w.errorf(loc, "expected a string, found a map")
	case []any:
		return "", false, w.errorf(loc, "expected a string, found a list")
	}
	return "", false, w.errorf(loc, "expected a string, found %T", v)
}

// fields reads the fields the rules find, from the root or relative to
// from, sorted by name and locator. A YAML document held in a string is
// parsed once, however many rules read it.
func (w walker) fields(rules []fieldRule, from []step) ([]schemas.Field, error) {
	var out []schemas.Field
	var docs map[string]any // by the locator of the string holding them
	for _, r := range rules {
		for _, m := range r.path.walk(w.root, from) {
			loc := m.locator()
			if r.fromKey {
				out = append(out, schemas.Field{Name: r.name, Value: m.key, Locator: loc})
				continue
			}
			if r.env && r.yaml == nil {
				out = append(out, w.envFields(r.name, m.value(), loc)...)
				continue
			}
			v, ok, err := w.scalar(m.value(), loc)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if r.yaml == nil {
				out = append(out, schemas.Field{Name: r.name, Value: schemas.RedactText(v), Locator: loc})
				continue
			}
			doc, parsed := docs[loc]
			if !parsed {
				if docs == nil {
					docs = map[string]any{}
				}
				doc = yamlDocument(v)
				docs[loc] = doc
			}
			out = append(out, w.yamlFields(r, doc, loc)...)
		}
	}
	return sortFields(out), nil
}

// sortFields orders fields by name, then locator.
func sortFields(out []schemas.Field) []schemas.Field {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Locator < out[j].Locator
	})
	return out
}

// components reads the components one component rule finds.
func (w walker) components(cr componentRule) ([]schemas.Component, error) {
	var out []schemas.Component
	for _, m := range cr.path.walk(w.root, nil) {
		if _, ok := m.value().(map[string]any); !ok {
			return nil, w.errorf(m.locator(), "expected a mapping, found %s", describe(m.value()))
		}
		c, err := w.component(cr, m)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// describe names the shape of a value for an error message.
func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return "a scalar"
}

// first returns the first non-null scalar a relative path reaches.
func (w walker) first(p path, from []step) (string, bool, error) {
	for _, m := range p.walk(w.root, from) {
		v, ok, err := w.scalar(m.value(), m.locator())
		if err != nil || ok {
			return v, ok, err
		}
	}
	return "", false, nil
}

// component reads the component one match of a component rule finds: its
// name, roles and labels, its containers and volumes, and its fields.
func (w walker) component(cr componentRule, m match) (schemas.Component, error) {
	c := schemas.Component{Locator: m.locator(), Containers: []schemas.Container{}}
	from := m.chain
	var err error
	if c.Name, err = w.componentName(cr, m); err != nil {
		return c, err
	}
	if c.Roles, err = w.componentRoles(cr, from); err != nil {
		return c, err
	}
	if c.Labels, err = w.componentLabels(cr, from); err != nil {
		return c, err
	}
	if err := w.componentContainers(cr, from, &c); err != nil {
		return c, err
	}
	if c.Fields, err = w.fields(cr.fields, from); err != nil {
		return c, err
	}
	return c, nil
}

// componentName is the first non-empty name the rule's sources give (the
// match's map key, or a path), else the rule's name; then its suffix.
func (w walker) componentName(cr componentRule, m match) (string, error) {
	name := ""
	for _, src := range cr.nameFrom {
		if src.key {
			if m.key != "" {
				name = m.key
				break
			}
			continue
		}
		v, ok, err := w.first(src.path, m.chain)
		if err != nil {
			return "", err
		}
		if ok && v != "" {
			name = v
			break
		}
	}
	if name == "" {
		name = cr.name
	}
	return name + cr.nameSuffix, nil
}

// componentRoles are the roles read from the rule's role fields, then its
// fixed roles, then those of the conditions that hold, without repeats.
func (w walker) componentRoles(cr componentRule, from []step) ([]string, error) {
	var roles []string
	for _, rf := range cr.roleFields {
		for _, rm := range rf.walk(w.root, from) {
			v, ok, err := w.scalar(rm.value(), rm.locator())
			if err != nil {
				return nil, err
			}
			if v = strings.TrimSpace(v); ok && v != "" {
				roles = append(roles, v)
			}
		}
	}
	roles = append(roles, cr.roles...)
	for _, rw := range cr.rolesWhen {
		if present := len(rw.path.walk(w.root, from)) > 0; present == rw.present {
			roles = append(roles, rw.roles...)
		}
	}
	return dedupe(roles), nil
}

// componentLabels are the allow-listed labels of the pod template, their
// values redacted; nil when there is none.
func (w walker) componentLabels(cr componentRule, from []step) (map[string]string, error) {
	if cr.labels == nil {
		return nil, nil
	}
	var out map[string]string
	for _, lm := range cr.labels.walk(w.root, from) {
		labels, ok := lm.value().(map[string]any)
		if !ok {
			return nil, w.errorf(lm.locator(), "expected a map of labels, found %s", describe(lm.value()))
		}
		for k, v := range labels {
			if !w.n.labelAllow[k] {
				continue
			}
			s, ok, err := w.scalar(v, joinKey(lm.locator(), k))
			if err != nil {
				return nil, err
			}
			if ok {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = schemas.RedactText(s)
			}
		}
	}
	return out, nil
}

// componentContainers reads the containers of a component into c, the
// main ones (each with the secrets the rule adds to its envFrom) before
// the init ones, and its volumes: with no volume rule, mounts are dropped.
func (w walker) componentContainers(cr componentRule, from []step, c *schemas.Component) error {
	secrets, err := w.envFromSecrets(cr, from)
	if err != nil {
		return err
	}
	var main, init []schemas.Container
	for _, rule := range cr.containers {
		got, err := w.containers(rule, from)
		if err != nil {
			return err
		}
		if rule.init {
			init = append(init, got...)
		} else {
			main = append(main, got...)
		}
	}
	nodes := w.nodeAccelerators(cr, from)
	for i := range main {
		main[i].EnvFrom = append(main[i].EnvFrom, secrets...)
		addAccelerators(&main[i], nodes)
	}
	c.Containers = append(append(c.Containers, main...), init...)
	if cr.volumes == nil {
		for i := range c.Containers {
			c.Containers[i].Mounts = nil
		}
		return nil
	}
	vols, err := w.volumes(*cr.volumes, from)
	if err != nil {
		return err
	}
	w.useConfigMaps(*cr.volumes, from, c)
	c.Volumes = keepVolumes(vols, c.Containers)
	return nil
}

// envFromSecrets are the secrets the rule's paths name, which the
// operator adds to the envFrom of every main container.
func (w walker) envFromSecrets(cr componentRule, from []step) ([]schemas.EnvSource, error) {
	var secrets []schemas.EnvSource
	for _, ef := range cr.envFromSecrets {
		for _, em := range ef.walk(w.root, from) {
			v, ok, err := w.scalar(em.value(), em.locator())
			if err != nil {
				return nil, err
			}
			if ok && v != "" {
				secrets = append(secrets, schemas.EnvSource{Kind: "secret", Name: v})
			}
		}
	}
	return secrets, nil
}

// dedupe is in without repeats, in first-seen order.
func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// yamlDocument is the YAML document held in text; nil when there is none
// (empty, too large, or not YAML).
func yamlDocument(text string) any {
	const maxDocument = 1 << 20
	if text == "" || len(text) > maxDocument {
		return nil
	}
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil
	}
	return doc
}

// envFields reads a map of env variables at loc: a field "NAME=value" for
// each variable whose value the env allow-list keeps (and that does not
// look like a credential), in name order; the others are left out.
func (w walker) envFields(name string, v any, loc string) []schemas.Field {
	vars, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []schemas.Field
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if !w.n.envAllow.has(k) {
			continue
		}
		val, ok, err := w.scalar(vars[k], loc+"."+k)
		if err != nil || !ok || looksLikeCredential(val) || schemas.RedactText(val) != val {
			continue
		}
		out = append(out, schemas.Field{Name: name, Value: k + "=" + val, Locator: loc + "." + k})
	}
	return out
}

// yamlFields reads the fields a YAML document held in a string gives:
// the scalars r.yaml reaches in it. Their locators are the string's
// locator, a colon and the path inside the document. A document of no
// maps and lists gives nothing.
func (w walker) yamlFields(r fieldRule, doc any, loc string) []schemas.Field {
	var out []schemas.Field
	for _, m := range r.yaml.walk(doc, nil) {
		dloc := loc + ":" + m.locator()
		if r.env {
			out = append(out, w.envFields(r.name, m.value(), dloc)...)
			continue
		}
		if v, ok, err := w.scalar(m.value(), dloc); err == nil && ok {
			out = append(out, schemas.Field{Name: r.name, Value: schemas.RedactText(v), Locator: dloc})
		}
	}
	return out
}
