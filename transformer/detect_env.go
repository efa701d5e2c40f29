package transformer

import (
	"strconv"
	"strings"
)

// envClaims reads the literal env values of a container: settings, models,
// the revision and, unless the image is a simulator, the wrappers' backends
// a truthy variable selects.
func (r *rules) envClaims(cd *compDetect, x *ctrScope) {
	for k, e := range x.ct.Env {
		if e.Value == "" || e.Redacted || e.From != nil {
			continue
		}
		l := x.ct.Locator + ".env[" + strconv.Itoa(k) + "]"
		if name, ok := r.settingEnv[e.Name]; ok {
			cd.setting(name, e.Value)
		}
		if r.modelEnv[e.Name] {
			x.models = append(x.models, modelClaim{value: e.Value, hf: r.hfEnv[e.Name], conf: confDeclared, how: "env " + e.Name, locator: l})
		}
		if r.listEnv[e.Name] {
			for _, v := range strings.FieldsFunc(e.Value, func(c rune) bool { return c == ';' || c == ',' || c == ' ' }) {
				x.models = append(x.models, modelClaim{value: v, hf: true, conf: confDeclared, how: "env " + e.Name, locator: l})
			}
		}
		if r.revEnv[e.Name] && !unresolvedRef(e.Value) {
			x.revision = e.Value
		}
		if x.simulator == "" && envTruthy(e.Value) {
			for _, eb := range r.envRules[e.Name] {
				p := proof{conf: confDeclared, value: "env " + e.Name + "=" + e.Value, locator: l}
				cd.backend(eb.runtime, eb.backend, p)
				cd.backendProofs = append(cd.backendProofs, namedProof{name: eb.runtime, p: p})
			}
		}
	}
}

// envTruthy reports an env value that switches something on.
func envTruthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}
