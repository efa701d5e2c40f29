package transformer

import (
	"encoding/json"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// entrypointFlagClaims takes the flags that name the model only for an
// engine, when the image's entrypoint is that engine (inv is the args given
// to it).
func (x *ctrScope) entrypointFlagClaims(inv *Invocation) {
	for _, m := range x.matches {
		x.engineModelFlags(inv, m.rule)
	}
}

// flagClaims reads the flags of one invocation: roles, settings, models,
// the revision and wrappers' backends.
func (r *rules) flagClaims(cd *compDetect, x *ctrScope, inv *Invocation) {
	for _, f := range inv.Flags {
		r.flagRole(cd, f)
		if !f.HasValue {
			continue
		}
		if name, ok := r.settingFlag[f.Name]; ok {
			cd.setting(name, f.Value)
		}
		if r.modelFlags[f.Name] {
			x.claim(modelClaim{value: f.Value, hf: r.hfFlags[f.Name], conf: confDeclared,
				how: "flag " + f.Name, locator: x.loc(f.ValueSrc)})
		}
		if r.listFlags[f.Name] {
			listFlagModels(inv, f, x)
		}
		if keys := r.jsonFlags[f.Name]; keys != nil {
			jsonFlagModels(x, f, keys)
		}
		if r.revFlags[f.Name] && f.Value != schemas.RedactedValue && !unresolvedRef(f.Value) {
			x.revision = f.Value
		}
		r.backendFlagClaims(cd, x, f)
	}
}

// backendFlagClaims: a wrapper's backend flag names the engine it runs.
func (r *rules) backendFlagClaims(cd *compDetect, x *ctrScope, f Flag) {
	for _, rt := range r.backendFlags[f.Name] {
		p := proof{conf: confDeclared, value: "flag " + f.Name + "=" + f.Value, locator: x.loc(f.Src)}
		if eng, ok := rt.BackendFlag.Values[strings.ToLower(f.Value)]; ok && eng != "" {
			cd.backend(rt.Name, eng, p)
		} else if !ok && !unresolvedRef(f.Value) {
			cd.backend(rt.Name, strings.ToLower(f.Value), p)
		}
	}
}

// engineFlagClaims: a flag only some engines take suggests them; the first
// evidence of each is kept.
func (r *rules) engineFlagClaims(cd *compDetect, x *ctrScope, inv *Invocation) {
	for _, f := range inv.Flags {
		for _, en := range r.engineFlagOwners[f.Name] {
			seen := false
			for _, ef := range cd.engineFlags {
				if ef.name == en {
					seen = true
					break
				}
			}
			if !seen {
				cd.engineFlags = append(cd.engineFlags, namedProof{name: en, p: proof{conf: confInferred, value: "engine flag " + f.Name, locator: x.loc(f.Src)}})
			}
		}
	}
}

// jsonFlagModels claims the models the keys of a JSON flag value name.
func jsonFlagModels(x *ctrScope, f Flag, keys []string) {
	var obj map[string]any
	if json.Unmarshal([]byte(f.Value), &obj) != nil {
		return
	}
	for _, k := range keys {
		if v, ok := obj[k].(string); ok && v != "" {
			x.claim(modelClaim{value: v, conf: confDeclared, how: "flag " + f.Name + " " + k, locator: x.loc(f.ValueSrc)})
		}
	}
}

// listFlagModels claims the models a list flag names: its value and the
// words after it up to the next flag, each "[NAME=]LOCATION".
func listFlagModels(inv *Invocation, f Flag, x *ctrScope) {
	add := func(v string, src int) {
		if _, loc, ok := strings.Cut(v, "="); ok {
			v = loc
		}
		if v != "" && v != "all" {
			x.claim(modelClaim{value: v, conf: confDeclared, how: "flag " + f.Name, locator: x.loc(src)})
		}
	}
	add(f.Value, f.ValueSrc)
	after := false
	for _, w := range inv.Words {
		if w.Src == f.ValueSrc && w.Text == f.Value {
			after = true
			continue
		}
		if !after {
			continue
		}
		if strings.HasPrefix(w.Text, "-") {
			break
		}
		add(w.Text, w.Src)
	}
}
