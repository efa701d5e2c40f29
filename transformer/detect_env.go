package transformer

import "strings"

// envClaims reads the env values of a container (literal, or from a
// ConfigMap): settings, models,
// the revision and, unless the image is a simulator, the wrappers' backends
// a truthy variable selects.
func (r *rules) envClaims(cd *compDetect, x *ctrScope) {
	for _, ev := range x.envs {
		e := struct{ Name, Value string }{ev.name, ev.value}
		if name, ok := r.settingEnv[e.Name]; ok {
			cd.setting(name, e.Value)
		}
		if r.modelEnv[e.Name] || matchAny(r.modelEnvRE, e.Name) {
			x.claim(modelClaim{value: e.Value, hf: r.hfEnv[e.Name], conf: confDeclared, how: "env " + e.Name, locator: x.envLoc(ev)})
		}
		if r.listEnv[e.Name] {
			l, how := x.envLoc(ev), "env "+e.Name
			for _, v := range strings.FieldsFunc(e.Value, func(c rune) bool { return c == ';' || c == ',' || c == ' ' }) {
				x.claim(modelClaim{value: v, hf: true, conf: confDeclared, how: how, locator: l})
			}
		}
		if r.revEnv[e.Name] && !unresolvedRef(e.Value) {
			x.revision = e.Value
		}
		if x.simulator == "" && envTruthy(e.Value) {
			for _, eb := range r.envRules[e.Name] {
				if eb.value != "" && !strings.EqualFold(strings.TrimSpace(e.Value), eb.value) {
					continue
				}
				p := proof{conf: confDeclared, value: "env " + e.Name + "=" + e.Value, locator: x.envLoc(ev)}
				cd.backend(eb.runtime, eb.backend, p)
				cd.backendProofs = append(cd.backendProofs, namedProof{name: eb.runtime, p: p})
			}
		}
	}
}

// envTruthy reports an env value that switches something on: any but
// "", 0, false, no and off, in any case, spaces around.
func envTruthy(v string) bool {
	v = strings.TrimSpace(v)
	// No rune but an ASCII letter lowers to a letter of these words
	// (TestEnvTruthy checks every rune): ASCII folding is lowering here.
	for _, off := range [...]string{"", "0", "false", "no", "off"} {
		if foldedIs(v, off) {
			return false
		}
	}
	return true
}
