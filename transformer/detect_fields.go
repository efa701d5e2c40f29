package transformer

import (
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/imageref"
)

// fieldClaims reads kind fields: runtime names, versions, settings and models.
func (r *rules) fieldClaims(cd *compDetect, fields []schemas.Field, d *detection) {
	var version *schemas.Field
	var fieldHits []*runtimeHit
	var hfNS, hfName, hfLoc string
	for i := range fields {
		f := &fields[i]
		switch f.Name {
		case "runtimeVersion":
			version = f
		case "hfNamespace":
			hfNS, hfLoc = f.Value, f.Locator
		case "hfModelName":
			hfName = f.Value
			if hfLoc == "" {
				hfLoc = f.Locator
			}
		}
		fieldHits = r.runtimeFieldClaims(cd, f, fieldHits)
		if r.serving.engineFields[f.Name] {
			r.engineHintClaims(cd, fields, f)
		}
		if name, ok := r.settingField[f.Name]; ok {
			cd.setting(name, f.Value)
		}
		if r.envFields[f.Name] {
			r.envFieldClaims(cd, d, f)
		}
		if r.revFields[f.Name] && !unresolvedRef(f.Value) {
			d.argRevision.add(f.Value) // pins the models kind fields name
		}
		if r.modelFields[f.Name] && !r.storedClaim(cd, d, fields, f) {
			r.addModel(cd, d, modelClaim{value: f.Value, conf: confDeclared, how: "field " + f.Name, locator: f.Locator, adapter: r.adapterFields[f.Name]})
		}
		r.modelFieldClaims(cd, d, fields, f)
	}
	r.versionFieldClaims(cd, fields)
	r.defaultClaims(cd, fields)
	if version != nil {
		if vc, ok := fieldVersion(version); ok {
			for _, h := range fieldHits {
				h.versions = append(h.versions, vc)
			}
		}
	}
	if hfNS != "" && hfName != "" {
		r.addModel(cd, d, modelClaim{value: hfNS + "/" + hfName, hf: true, conf: confDeclared, how: "fields hfNamespace+hfModelName", locator: hfLoc})
	} else if hfName != "" {
		r.addModel(cd, d, modelClaim{value: hfName, hf: true, conf: confDeclared, how: "field hfModelName", locator: hfLoc})
	}
}

// engineHintClaims: a field whose value names an engine in words of its
// own (vLLMDisaggregated, TRITON_SERVER): the engine whose name or word
// starts it, or is a word of it, inferred, with the version a field
// beside it gives.
func (r *rules) engineHintClaims(cd *compDetect, fields []schemas.Field, f *schemas.Field) {
	rt := r.engineInText(f.Value)
	if rt == nil {
		return
	}
	p := proof{conf: confInferred, value: "field " + f.Name + "=" + f.Value, locator: f.Locator}
	h := cd.hit(rt, confInferred, p)
	for i := range fields {
		v := &fields[i]
		if v.Name != r.serving.versionField || !sourced(fields, v, f.Name) {
			continue
		}
		if vc, ok := fieldVersion(v); ok {
			vc.proof.conf = confInferred
			h.versions = append(h.versions, vc)
		}
	}
}

// engineInText is the engine a free text names: its name or one of its
// words at the start of it (vLLMDisaggregated) or as a word of it.
func (r *rules) engineInText(s string) *runtimeRule {
	s = strings.ToLower(strings.TrimSpace(s))
	if rt := r.byName[s]; rt != nil {
		return rt
	}
	for _, w := range r.serving.words {
		if w.re.MatchString(s) || w.prefix.MatchString(s) {
			return w.rule
		}
	}
	return nil
}

// storedClaim: f is a store (pvc://, s3://, a path) and a field beside it
// (models.stored) gives the Hugging Face id of what it holds: that id is
// the model, inferred, with the store as its path. It reports whether it
// claimed the model.
func (r *rules) storedClaim(cd *compDetect, d *detection, fields []schemas.Field, f *schemas.Field) bool {
	for _, p := range r.stored {
		if p.Source != f.Name {
			continue
		}
		if mi := r.classify(f.Value, false); mi.kind == locHF || mi.kind == locName || mi.ignored {
			return false
		}
		for i := range fields {
			n := &fields[i]
			if n.Name != p.Name || !sourced(fields, n, f.Name) {
				continue
			}
			if mi := r.classify(n.Value, false); mi.kind == locHF && strings.Contains(mi.id, "/") {
				r.addModel(cd, d, modelClaim{value: n.Value, hf: true, conf: confInferred, how: "field " + n.Name + ", held by " + f.Name,
					locator: n.Locator, path: f.Value, pathLocator: f.Locator})
				return true
			}
		}
	}
	return false
}

// envFieldClaims reads a field holding an env variable ("NAME=value") as
// the env of a container: a model variable names a model.
func (r *rules) envFieldClaims(cd *compDetect, d *detection, f *schemas.Field) {
	name, value, ok := strings.Cut(f.Value, "=")
	if !ok || value == "" || unresolvedRef(value) {
		return
	}
	if r.modelEnv[name] || matchAny(r.modelEnvRE, name) {
		r.addModel(cd, d, modelClaim{value: value, hf: r.hfEnv[name], conf: confDeclared, how: "env " + name, locator: f.Locator})
	}
}

// runtimeFieldClaims applies the runtimes' field rules to f: a match
// declares the runtime (and a wrapper's backend) and is appended to hits.
func (r *rules) runtimeFieldClaims(cd *compDetect, f *schemas.Field, hits []*runtimeHit) []*runtimeHit {
	for _, rt := range r.fieldRules[f.Name] {
		for _, fm := range rt.fields {
			if fm.name != f.Name {
				continue
			}
			for _, re := range fm.res {
				if !re.MatchString(f.Value) {
					continue
				}
				p := proof{conf: confDeclared, value: "field " + f.Name + "=" + f.Value, locator: f.Locator}
				hits = append(hits, cd.hit(rt, confDeclared, p))
				// A wrapper's backendFramework names its engine.
				for _, w := range r.wrappersOf[rt.Name] {
					cd.backend(w.Name, rt.Name, p)
				}
				break
			}
		}
	}
	return hits
}

// modelFieldClaims reads the fields that name a model in other ways than
// models.fields: an image holding it, a preset name, a served name that
// is the model unless a source beside it says otherwise.
func (r *rules) modelFieldClaims(cd *compDetect, d *detection, fields []schemas.Field, f *schemas.Field) {
	if r.imageFields[f.Name] {
		r.addModel(cd, d, modelClaim{value: "oci://" + f.Value, conf: confDeclared, how: "field " + f.Name, locator: f.Locator, adapter: r.adapterFields[f.Name]})
	}
	if presets, ok := r.presets[f.Name]; ok {
		// A catalog name stands for its Hugging Face id; anything else is
		// kept as written (an org/name id is a Hugging Face id anyway).
		v, how, hf := f.Value, "field "+f.Name, false
		if id, ok := presets[strings.ToLower(v)]; ok {
			v, how, hf = id, how+"="+f.Value+" (preset)", true
		}
		r.addModel(cd, d, modelClaim{value: v, hf: hf, conf: confDeclared, how: how, locator: f.Locator})
	}
	for _, p := range r.pairs {
		if p.Name != f.Name {
			continue
		}
		if sourced(fields, f, p.Source) {
			if name, ok := r.settingField["modelName"]; ok {
				cd.setting(name, f.Value)
			}
			continue
		}
		r.addModel(cd, d, modelClaim{value: f.Value, hf: true, conf: confDeclared, how: "field " + f.Name, locator: f.Locator})
	}
}

// sourced reports whether a field named source sits beside f (under the
// same parent in the document).
func sourced(fields []schemas.Field, f *schemas.Field, source string) bool {
	parent := f.Locator
	if i := strings.LastIndexByte(parent, '.'); i >= 0 {
		parent = parent[:i]
	}
	for i := range fields {
		if fields[i].Name == source && strings.HasPrefix(fields[i].Locator, parent+".") {
			return true
		}
	}
	return false
}

// versionFieldClaims gives the runtimes of cd the versions their
// versionFields state.
func (r *rules) versionFieldClaims(cd *compDetect, fields []schemas.Field) {
	for i := range fields {
		f := &fields[i]
		rts := r.versionFields[f.Name]
		if len(rts) == 0 {
			continue
		}
		vc, ok := fieldVersion(f)
		if !ok {
			continue
		}
		for _, rt := range rts {
			if h := cd.hitOf(rt.Name); h != nil {
				h.versions = append(h.versions, vc)
			}
		}
	}
}

// fieldVersion is the version f states, declared; ok is false when its
// value is no version.
func fieldVersion(f *schemas.Field) (vc versionClaim, ok bool) {
	v, variant := imageref.ParseVersion(f.Value)
	if v == "" {
		return vc, false
	}
	return versionClaim{version: v, variant: variant, proof: proof{conf: confDeclared, value: "field " + f.Name + "=" + f.Value, locator: f.Locator}}, true
}

// truncations reads the collector's marks of what it cut
// (schemas.FieldTruncated) among fields: a mark whose locator is in one of
// containers goes to that container's component, any other to the
// workload. Each becomes a bomstream:truncated property, "locator: what was
// kept, whole sha256:...".
func (d *detection) truncations(fields []schemas.Field, containers []schemas.Container, r *rules) {
	for i := range fields {
		f := &fields[i]
		if f.Name != schemas.FieldTruncated {
			continue
		}
		text := f.Value
		if f.Locator != "" {
			text = f.Locator + ": " + f.Value
		}
		var ch *containerHit
		for k := range containers {
			ct := &containers[k]
			if ct.Image == "" || f.Locator != ct.Locator && !strings.HasPrefix(f.Locator, ct.Locator+".") {
				continue
			}
			ch, _ = d.containers.get(imageKey(ct.Image, r.image(ct.Image)))
			break
		}
		if ch != nil {
			ch.truncated = append(ch.truncated, text)
		} else {
			d.truncated = append(d.truncated, text)
		}
	}
}
