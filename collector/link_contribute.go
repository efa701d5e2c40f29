package collector

import (
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

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

// foreign is a walker over another object, for what it contributes.
func (w walker) foreign(kind, name string, obj map[string]any) walker {
	return walker{n: w.n, id: kind + "/" + name, root: obj, ns: w.ns}
}

// prefixFields starts the locator of every field with prefix, in place.
func prefixFields(fs []schemas.Field, prefix string) []schemas.Field {
	for i := range fs {
		fs[i].Locator = prefix + fs[i].Locator
	}
	return fs
}

// fillAll is ws with r's replacements made in every word (nil stays nil).
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
