package transformer

import (
	"encoding/json"
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

// entrypointFlagClaims takes the flags that name the model only for an
// engine, when the image's entrypoint is that engine (inv is the args given
// to it).
func (x *ctrScope) entrypointFlagClaims(inv *cmdline.Invocation) {
	for _, m := range x.matches {
		x.engineModelFlags(inv, m.rule)
	}
}

// flagClaims reads the flags of one invocation: roles, settings, models,
// the revision and wrappers' backends.
func (r *rules) flagClaims(cd *compDetect, x *ctrScope, inv *cmdline.Invocation) {
	for _, f := range inv.Flags {
		fr := r.flags[f.Name]
		if fr == nil {
			continue
		}
		flagRole(cd, fr, f)
		if !f.HasValue {
			continue
		}
		if fr.setting != "" {
			cd.setting(fr.setting, f.Value)
		}
		if fr.model {
			x.claim(modelClaim{value: f.Value, hf: fr.hf, conf: confDeclared,
				how: "flag " + f.Name, locator: x.loc(f.ValueSrc)})
		}
		if fr.list {
			listFlagModels(inv, f, x)
		}
		if fr.jsonKeys != nil {
			jsonFlagModels(x, f, fr.jsonKeys)
		}
		if fr.rev && f.Value != schemas.RedactedValue && !unresolvedRef(f.Value) {
			x.revision = f.Value
		}
		backendFlagClaims(cd, x, fr, f)
	}
}

// backendFlagClaims: a wrapper's backend flag names the engine it runs.
func backendFlagClaims(cd *compDetect, x *ctrScope, fr *flagRule, f cmdline.Flag) {
	for _, rt := range fr.backendOf {
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
func (r *rules) engineFlagClaims(cd *compDetect, x *ctrScope, inv *cmdline.Invocation) {
	for _, f := range inv.Flags {
		fr := r.flags[f.Name]
		if fr == nil {
			continue
		}
		for _, en := range fr.engines {
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
func jsonFlagModels(x *ctrScope, f cmdline.Flag, keys []string) {
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
func listFlagModels(inv *cmdline.Invocation, f cmdline.Flag, x *ctrScope) {
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
