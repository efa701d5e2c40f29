package collector

import (
	"maps"
	"slices"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// containers reads the containers one rule describes.
func (w walker) containers(r containerRule, from []step) ([]schemas.Container, error) {
	var out []schemas.Container
	switch {
	case r.list != nil:
		for _, lm := range r.list.walk(w.root, from) {
			items, ok := lm.value().([]any)
			if !ok {
				return nil, w.errorf(lm.locator(), "expected a list of containers, found %s", describe(lm.value()))
			}
			for i, item := range items {
				loc := joinIndex(lm.locator(), i)
				obj, ok := item.(map[string]any)
				if !ok {
					if item == nil {
						continue
					}
					return nil, w.errorf(loc, "expected a container, found %s", describe(item))
				}
				c, err := w.container(obj, loc, r.name, r.init)
				if err != nil {
					return nil, err
				}
				addAccelerators(&c, w.ruleAccelerators(r, from))
				out = append(out, c)
			}
		}
	case r.single != nil:
		for _, sm := range r.single.walk(w.root, from) {
			obj, ok := sm.value().(map[string]any)
			if !ok {
				return nil, w.errorf(sm.locator(), "expected a container, found %s", describe(sm.value()))
			}
			c, err := w.container(obj, sm.locator(), r.name, r.init)
			if err != nil {
				return nil, err
			}
			addAccelerators(&c, w.ruleAccelerators(r, from))
			out = append(out, c)
		}
	default:
		c, ok, err := w.synthesize(r, from)
		if err != nil || !ok {
			return nil, err
		}
		addAccelerators(&c, w.ruleAccelerators(r, from))
		out = append(out, c)
	}
	return out, nil
}

// container reads one container object.
func (w walker) container(obj map[string]any, loc, defaultName string, init bool) (schemas.Container, error) {
	c := schemas.Container{Locator: loc, Init: init}
	if rp, _ := obj["restartPolicy"].(string); init && rp == "Always" {
		c.Sidecar = true
	}
	var err error
	if c.Name, _, err = w.scalar(obj["name"], loc+".name"); err != nil {
		return c, err
	}
	if c.Name == "" {
		c.Name = defaultName
	}
	if c.Image, _, err = w.scalar(obj["image"], loc+".image"); err != nil {
		return c, err
	}
	if c.Command, err = w.stringList(obj["command"], loc+".command"); err != nil {
		return c, err
	}
	if c.Args, err = w.stringList(obj["args"], loc+".args"); err != nil {
		return c, err
	}
	c.Command, c.Args = w.n.args.command(c.Command, c.Args)
	if c.Env, err = w.env(obj["env"], loc+".env"); err != nil {
		return c, err
	}
	if c.EnvFrom, err = w.envFrom(obj["envFrom"], loc+".envFrom"); err != nil {
		return c, err
	}
	if c.Mounts, err = w.mounts(obj["volumeMounts"], loc+".volumeMounts"); err != nil {
		return c, err
	}
	if c.Ports, err = w.ports(obj["ports"], loc+".ports"); err != nil {
		return c, err
	}
	if c.Probes, err = w.probes(obj, loc); err != nil {
		return c, err
	}
	addAccelerators(&c, resourceNames(obj["resources"]))
	return c, nil
}

// synthesize builds the container an operator creates from a kind's fields.
func (w walker) synthesize(r containerRule, from []step) (schemas.Container, bool, error) {
	if r.when != nil {
		v, ok, err := w.first(*r.when, from)
		if err != nil {
			return schemas.Container{}, false, err
		}
		if !ok || !strings.EqualFold(v, "true") {
			return schemas.Container{}, false, nil
		}
	}
	var parts []string
	for _, ip := range r.image {
		v, ok, err := w.first(ip, from)
		if err != nil {
			return schemas.Container{}, false, err
		}
		if ok && v != "" {
			parts = append(parts, v)
		}
	}
	c := schemas.Container{Name: r.name, Init: r.init, Image: strings.Join(parts, r.imageSep)}
	if c.Image == "" && r.optional {
		return c, false, nil
	}
	c.Locator = from[len(from)-1].loc
	if r.locator != nil {
		c.Locator = r.locator.render(from)
	}
	if r.nameFrom != nil {
		v, ok, err := w.first(*r.nameFrom, from)
		if err != nil {
			return c, false, err
		}
		if ok && v != "" {
			c.Name = v
		}
	}
	var err error
	for _, f := range []struct {
		p   *path
		dst func(any, string) error
	}{
		{r.command, func(v any, loc string) (err error) { c.Command, err = w.stringList(v, loc); return }},
		{r.args, func(v any, loc string) (err error) { c.Args, err = w.stringList(v, loc); return }},
		{r.env, func(v any, loc string) (err error) { c.Env, err = w.env(v, loc); return }},
		{r.envMap, func(v any, loc string) (err error) { c.Env, err = w.envMap(v, loc); return }},
	} {
		if f.p == nil {
			continue
		}
		for _, m := range f.p.walk(w.root, from) {
			if err = f.dst(m.value(), m.locator()); err != nil {
				return c, false, err
			}
			break
		}
	}
	c.Command, c.Args = w.n.args.command(c.Command, c.Args)
	return c, true, nil
}

// render writes the locator a wildcard-free relative path names.
func (p path) render(from []step) string {
	loc := ""
	if !p.absolute && len(from) > p.up {
		loc = from[len(from)-1-p.up].loc
	}
	for _, s := range p.segs {
		loc = joinKey(loc, s.key)
	}
	return loc
}

// stringList reads a command or args list, converting scalars to strings.
// The caller redacts command and args together (argRedactor.command).
func (w walker) stringList(v any, loc string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of strings, found %s", describe(v))
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, _, err := w.scalar(item, joinIndex(loc, i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// env reads an env list. Literal values survive only for allow-listed names
// and only when they do not look like a credential; the values of argsEnv
// variables are redacted as arguments.
func (w walker) env(v any, loc string) ([]schemas.EnvVar, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of env vars, found %s", describe(v))
	}
	var out []schemas.EnvVar
	for i, item := range items {
		iloc := joinIndex(loc, i)
		if item == nil {
			continue
		}
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, w.errorf(iloc, "expected an env var, found %s", describe(item))
		}
		name, _, err := w.scalar(obj["name"], iloc+".name")
		if err != nil {
			return nil, err
		}
		e := schemas.EnvVar{Name: name}
		value, _, err := w.scalar(obj["value"], iloc+".value")
		if err != nil {
			return nil, err
		}
		e.Value, e.Redacted = w.n.envValue(name, value)
		if vf, ok := obj["valueFrom"].(map[string]any); ok {
			if e.From, err = w.keyRef(vf, iloc+".valueFrom"); err != nil {
				return nil, err
			}
		} else if obj["valueFrom"] != nil {
			return nil, w.errorf(iloc+".valueFrom", "expected a map, found %s", describe(obj["valueFrom"]))
		}
		out = append(out, e)
	}
	return out, nil
}

// keyRef reads the source of an env value (valueFrom): a Secret or
// ConfigMap key, a field or a resource; nil when it names none.
func (w walker) keyRef(vf map[string]any, loc string) (*schemas.KeyRef, error) {
	for _, ref := range []struct{ key, kind, name, item string }{
		{"secretKeyRef", "secret", "name", "key"},
		{"configMapKeyRef", "configMap", "name", "key"},
		{"fieldRef", "field", "", "fieldPath"},
		{"resourceFieldRef", "resource", "", "resource"},
	} {
		obj, ok := vf[ref.key].(map[string]any)
		if !ok {
			continue
		}
		out := &schemas.KeyRef{Kind: ref.kind}
		var err error
		if ref.name != "" {
			if out.Name, _, err = w.scalar(obj[ref.name], loc+"."+ref.key+"."+ref.name); err != nil {
				return nil, err
			}
		}
		if out.Key, _, err = w.scalar(obj[ref.item], loc+"."+ref.key+"."+ref.item); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, nil
}

// envFrom reads an envFrom list: the names (and prefixes) of the
// ConfigMaps and Secrets whose keys become env vars.
func (w walker) envFrom(v any, loc string) ([]schemas.EnvSource, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of env sources, found %s", describe(v))
	}
	var out []schemas.EnvSource
	for i, item := range items {
		iloc := joinIndex(loc, i)
		obj, ok := item.(map[string]any)
		if !ok {
			if item == nil {
				continue
			}
			return nil, w.errorf(iloc, "expected an env source, found %s", describe(item))
		}
		prefix, _, err := w.scalar(obj["prefix"], iloc+".prefix")
		if err != nil {
			return nil, err
		}
		for _, ref := range []struct{ key, kind string }{{"configMapRef", "configMap"}, {"secretRef", "secret"}} {
			r, ok := obj[ref.key].(map[string]any)
			if !ok {
				continue
			}
			name, _, err := w.scalar(r["name"], iloc+"."+ref.key+".name")
			if err != nil {
				return nil, err
			}
			out = append(out, schemas.EnvSource{Kind: ref.kind, Name: name, Prefix: prefix})
		}
	}
	return out, nil
}

// looksLikeCredential reports whether a value that would otherwise be kept
// (an allow-listed env value) carries something secret.
func looksLikeCredential(v string) bool {
	return strings.Contains(strings.ToLower(v), "token=") || schemas.RedactText(v) != v
}

// envMap reads env given as a map of names to values (a KubeAI Model's
// spec.env), in the order of the names, under the same rules as env.
func (w walker) envMap(v any, loc string) ([]schemas.EnvVar, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.errorf(loc, "expected a map of env values, found %s", describe(v))
	}
	keys := slices.Sorted(maps.Keys(m))
	items := make([]any, 0, len(keys))
	for _, k := range keys {
		if _, _, err := w.scalar(m[k], joinKey(loc, k)); err != nil {
			return nil, err
		}
		items = append(items, map[string]any{"name": k, "value": m[k]})
	}
	return w.env(items, loc)
}
