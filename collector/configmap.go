package collector

import (
	"maps"
	pathpkg "path"
	"slices"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// ConfigMaps are inputs. What a container takes from a ConfigMap is read
// as if it stood in the manifest: a configMapKeyRef value, the variables
// an envFrom configMapRef gives (EnvSource.Env), the files a ConfigMap
// volume puts where the container sees them (Container.Files: start
// scripts redacted word by word, configuration files cut to their
// allow-listed keys), the LoRA adapters a mounted ConfigMap lists, and
// the fields a profile's ConfigMap link reads (a KAITO Workspace's
// inference.config). Secrets are never read, whatever names them.
//
// An object is read in two steps. Draft reads it as its profile describes
// it and notes what it takes from ConfigMaps (the names only); Complete
// applies what a Lookup holds of those ConfigMaps and bounds the result.
// The manifest source does both at once (NormalizeWith); the cluster
// source keeps the Draft of each workload and completes it whenever it
// decides it, so that it keeps no object whole and a ConfigMap edit is a
// change of exactly the workloads that read it (Draft.ConfigMaps).

// Draft is an object read as its profile describes it, before the
// ConfigMaps it reads are applied. It is never changed once built and is
// safe for concurrent use.
type Draft struct {
	in *schemas.Inputs
	// uses is nil when the object reads no ConfigMap: in is then complete
	// and bounded.
	uses *configMapUses
}

// Inputs are the Inputs as read, before any ConfigMap is applied (not
// bounded when the object reads a ConfigMap): the caller must not modify
// them, and must Complete the draft before publishing.
func (d *Draft) Inputs() *schemas.Inputs { return d.in }

// ConfigMaps are the names of the ConfigMaps the object reads, in its
// namespace, sorted; none when it reads none.
func (d *Draft) ConfigMaps() []string {
	if d.uses == nil {
		return nil
	}
	return d.uses.names
}

// configMapUses is what an object takes from ConfigMaps, found while it
// is read. Env references are in the Inputs themselves (EnvVar.From,
// EnvSource).
type configMapUses struct {
	ns     string
	mounts []fileMount
	lora   []loraUse
	links  []linkUse
	names  []string
}

// fileMount is a container's mount of a volume that holds ConfigMaps.
type fileMount struct {
	container     string // the container's locator
	path, subPath string
	sources       []volumeSource
}

// volumeSource is one ConfigMap a volume projects: its keys as files, the
// items listed or, with none, every key.
type volumeSource struct {
	configMap string
	items     []keyPath
}

type keyPath struct{ key, path string }

// loraUse: the ConfigMaps a component's volumes name, read for the LoRA
// adapters they list.
type loraUse struct {
	component  string // the component's locator
	configMaps []string
}

// linkUse: a profile's link to a ConfigMap, by name.
type linkUse struct {
	rule *linkRule
	name string
}

// Draft reads obj as NormalizeWith does without a Lookup, but leaves the
// ConfigMaps it reads to Complete.
func (n *Normalizer) Draft(obj map[string]any, source string) (*Draft, error) {
	return n.draft(obj, source, nil, true)
}

// Complete applies to a draft what lookup holds of the ConfigMaps it
// reads, in its namespace (a ConfigMap lookup does not have, or a key it
// lacks, leaves the names only), and bounds the result. A draft that
// reads no ConfigMap is returned as it is; otherwise the Inputs are new.
// lookup may be nil. The caller must not modify the result.
func (n *Normalizer) Complete(d *Draft, lookup Lookup) *schemas.Inputs {
	if d.uses == nil {
		return d.in
	}
	out := cloneForConfigMaps(d.in)
	v := &configMapView{lookup: lookup, ns: d.uses.ns}
	for ci := range out.Components {
		comp := &out.Components[ci]
		for k := range comp.Containers {
			ct := &comp.Containers[k]
			n.applyEnv(ct, v)
			ct.Files = n.files(ct, d.uses.mounts, v)
		}
		for _, lu := range d.uses.lora {
			if lu.component == comp.Locator {
				comp.Fields = sortFields(append(comp.Fields, loraFields(lu.configMaps, v)...))
			}
		}
	}
	w := walker{n: n, ns: d.uses.ns}
	for _, lu := range d.uses.links {
		cm, ok := v.object(lu.name)
		if !ok {
			continue
		}
		l := linked{kind: "ConfigMap", name: lu.name, obj: cm, rule: lu.rule}
		if fs, err := w.linkFields([]linked{l}); err == nil {
			out.Fields = sortFields(append(out.Fields, fs...))
		}
	}
	n.cfg.Bounds.bound(out)
	return out
}

// finish ends a draft: the names of the ConfigMaps it reads, and nothing
// left to complete when there are none (in is then bounded).
func (n *Normalizer) finish(in *schemas.Inputs, uses *configMapUses) *Draft {
	var names []string
	for _, m := range uses.mounts {
		for _, s := range m.sources {
			names = append(names, s.configMap)
		}
	}
	for _, l := range uses.lora {
		names = append(names, l.configMaps...)
	}
	for _, l := range uses.links {
		names = append(names, l.name)
	}
	for _, comp := range in.Components {
		for _, ct := range comp.Containers {
			for _, e := range ct.Env {
				if e.From != nil && e.From.Kind == "configMap" {
					names = append(names, e.From.Name)
				}
			}
			for _, s := range ct.EnvFrom {
				if s.Kind == "configMap" {
					names = append(names, s.Name)
				}
			}
		}
	}
	names = slices.DeleteFunc(names, func(s string) bool { return s == "" })
	if len(names) == 0 {
		n.cfg.Bounds.bound(in)
		return &Draft{in: in}
	}
	slices.Sort(names)
	uses.names = slices.Compact(names)
	return &Draft{in: in, uses: uses}
}

// useConfigMaps notes, while a component is read, the ConfigMaps its
// volumes (at volumes) hold: the files its containers' mounts put in them,
// and the LoRA adapters they may list. It runs before the mounts of
// volumes that carry no model are dropped.
func (w walker) useConfigMaps(volumes path, from []step, c *schemas.Component) {
	if w.uses == nil {
		return
	}
	srcs, names := configMapVolumes(volumes.walk(w.root, from))
	if len(names) == 0 {
		return
	}
	w.uses.lora = append(w.uses.lora, loraUse{component: c.Locator, configMaps: names})
	for _, ct := range c.Containers {
		for _, m := range ct.Mounts {
			if s, ok := srcs[m.Volume]; ok {
				w.uses.mounts = append(w.uses.mounts, fileMount{container: ct.Locator, path: m.Path, subPath: m.SubPath, sources: s})
			}
		}
	}
}

// configMapVolumes reads the ConfigMaps of a pod's volumes: by volume name
// (as schemas.Mount names it), what each projects; and every ConfigMap
// they name, in order. Secret sources are never read.
func configMapVolumes(ms []match) (map[string][]volumeSource, []string) {
	out := map[string][]volumeSource{}
	var names []string
	for _, vm := range ms {
		items, _ := vm.value().([]any)
		for _, item := range items {
			v, _ := item.(map[string]any)
			vname, _ := v["name"].(string)
			var srcs []volumeSource
			if s, ok := configMapSource(v); ok {
				srcs = append(srcs, s)
			}
			proj, _ := v["projected"].(map[string]any)
			ps, _ := proj["sources"].([]any)
			for _, p := range ps {
				pm, _ := p.(map[string]any)
				if s, ok := configMapSource(pm); ok {
					srcs = append(srcs, s)
				}
			}
			for _, s := range srcs {
				names = append(names, s.configMap)
			}
			if vname != "" && len(srcs) > 0 {
				out[schemas.RedactText(vname)] = srcs
			}
		}
	}
	return out, dedupe(names)
}

// configMapSource is the ConfigMap a volume (or a projected volume's
// source) names, with its items.
func configMapSource(src map[string]any) (volumeSource, bool) {
	cm, _ := src["configMap"].(map[string]any)
	name, _ := cm["name"].(string)
	if name == "" {
		return volumeSource{}, false
	}
	s := volumeSource{configMap: name}
	items, _ := cm["items"].([]any)
	for _, it := range items {
		im, _ := it.(map[string]any)
		k, _ := im["key"].(string)
		p, _ := im["path"].(string)
		if k != "" && p != "" {
			s.items = append(s.items, keyPath{key: k, path: p})
		}
	}
	if s.items == nil && cm["items"] != nil {
		s.items = []keyPath{} // items listed, none usable: no file
	}
	return s, true
}

// configMapView is what one Complete sees of the ConfigMaps of a
// namespace.
type configMapView struct {
	lookup Lookup
	ns     string
}

// object is the ConfigMap name, if the lookup has it.
func (v *configMapView) object(name string) (map[string]any, bool) {
	if v.lookup == nil || name == "" {
		return nil, false
	}
	return v.lookup.Get("v1", "ConfigMap", v.ns, name)
}

// data is the data of the ConfigMap name: its string values by key.
func (v *configMapView) data(name string) (map[string]any, bool) {
	cm, ok := v.object(name)
	if !ok {
		return nil, false
	}
	d, _ := cm["data"].(map[string]any)
	return d, true
}

// value is the value of key in the ConfigMap name, if both are there.
func (v *configMapView) value(name, key string) (string, bool) {
	d, ok := v.data(name)
	if !ok {
		return "", false
	}
	s, ok := d[key].(string)
	return s, ok
}

// envValue is what is kept of an env var's value: the value of an
// allow-listed name that does not look like a credential, an argsEnv
// value redacted as arguments, else nothing, with redacted set.
func (n *Normalizer) envValue(name, value string) (kept string, redacted bool) {
	switch {
	case value == "":
		return "", false
	case n.args.argsEnv[name]:
		return n.args.script(value, false, 0), false
	case n.envAllow.has(name) && !looksLikeCredential(value):
		return value, false
	}
	return "", true
}

// applyEnv gives a container the values of its configMapKeyRef variables
// and the variables of its envFrom ConfigMaps, by the env rules.
func (n *Normalizer) applyEnv(ct *schemas.Container, v *configMapView) {
	for i := range ct.Env {
		e := &ct.Env[i]
		if e.From == nil || e.From.Kind != "configMap" {
			continue
		}
		if val, ok := v.value(e.From.Name, e.From.Key); ok {
			e.Value, e.Redacted = n.envValue(e.Name, val)
		}
	}
	for i := range ct.EnvFrom {
		s := &ct.EnvFrom[i]
		if s.Kind != "configMap" {
			continue
		}
		data, ok := v.data(s.Name)
		if !ok {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			val, ok := data[k].(string)
			if !ok {
				continue
			}
			name := schemas.RedactText(s.Prefix + k)
			e := schemas.EnvVar{Name: name, From: &schemas.KeyRef{Kind: "configMap", Name: s.Name, Key: schemas.RedactText(k)}}
			e.Value, e.Redacted = n.envValue(name, val)
			s.Env = append(s.Env, e)
		}
	}
}

// files are the files the container's ConfigMap mounts put where it sees
// them, sorted by path: scripts and configuration files only.
func (n *Normalizer) files(ct *schemas.Container, mounts []fileMount, v *configMapView) []schemas.File {
	var out []schemas.File
	for _, m := range mounts {
		if m.container != ct.Locator {
			continue
		}
		for _, src := range m.sources {
			data, ok := v.data(src.configMap)
			if !ok {
				continue
			}
			for _, kp := range src.entries(data) {
				at, ok := m.at(kp.path)
				text, isText := data[kp.key].(string)
				if !ok || !isText {
					continue
				}
				loc := joinKey("ConfigMap/"+src.configMap+":data", kp.key)
				if f, ok := n.file(at, loc, text, ct); ok {
					out = append(out, f)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b schemas.File) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Locator, b.Locator)
	})
	return out
}

// entries are the files a source puts in its volume: its items, else
// every key of data (sorted), each at the path named by the key.
func (s volumeSource) entries(data map[string]any) []keyPath {
	if s.items != nil {
		return s.items
	}
	var out []keyPath
	for _, k := range slices.Sorted(maps.Keys(data)) {
		out = append(out, keyPath{key: k, path: k})
	}
	return out
}

// at is where the container sees the file at rel in the volume: under the
// mount path, or, with a subPath, the mount path itself (the file is the
// subPath) or under it (the subPath is a directory); false when the
// subPath leaves it out.
func (m fileMount) at(rel string) (string, bool) {
	switch {
	case m.subPath == "":
		return pathpkg.Join(m.path, rel), true
	case rel == m.subPath:
		return m.path, true
	case strings.HasPrefix(rel, strings.TrimSuffix(m.subPath, "/")+"/"):
		return pathpkg.Join(m.path, strings.TrimPrefix(rel, strings.TrimSuffix(m.subPath, "/")+"/")), true
	}
	return "", false
}

// cloneForConfigMaps copies in deeply enough that Complete can change the
// fields of its components and the env, envFrom and files of their
// containers without touching in.
func cloneForConfigMaps(in *schemas.Inputs) *schemas.Inputs {
	out := *in
	out.Fields = slices.Clone(in.Fields)
	out.Components = cloneComponents(in.Components)
	for ci := range out.Components {
		for k := range out.Components[ci].Containers {
			ct := &out.Components[ci].Containers[k]
			ct.Env = slices.Clone(ct.Env)
			ct.EnvFrom = slices.Clone(ct.EnvFrom)
			ct.Files = slices.Clone(ct.Files)
		}
	}
	return &out
}

// ConfigMapsIn names, sorted, the ConfigMaps an object names anywhere in
// it: configMapKeyRef and configMapRef names, configMap volumes and
// projected sources. A cluster source keeps those of the objects others
// read (a KServe runtime whose containers join a predictor).
func ConfigMapsIn(obj map[string]any) []string {
	var names []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"configMapKeyRef", "configMapRef", "configMap"} {
				if ref, ok := x[k].(map[string]any); ok {
					if name, _ := ref["name"].(string); name != "" {
						names = append(names, name)
					}
				}
			}
			for _, c := range x {
				walk(c, depth+1)
			}
		case []any:
			for _, c := range x {
				walk(c, depth+1)
			}
		}
	}
	walk(obj, 0)
	if names == nil {
		return nil
	}
	slices.Sort(names)
	return slices.Compact(names)
}
