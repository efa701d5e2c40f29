package transformer

import (
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

// wordClaims reads each word of an invocation: the roles its role patterns
// give and, unless the image is a simulator, the runtimes its hints suggest.
func (r *rules) wordClaims(cd *compDetect, x *ctrScope, inv *cmdline.Invocation) {
	for _, w := range inv.Words {
		wi := r.word(w.Text)
		for _, role := range wi.roles {
			cd.roles.add(role)
		}
		if x.simulator != "" {
			continue
		}
		for _, h := range wi.hints {
			sig := sigHint
			if h.conf == confDeclared {
				sig = sigLaunch
			}
			x.signal(r.serving, sig, h.value, "", x.loc(w.Src), "", h.rule)
			cd.hit(h.rule, h.conf, proof{conf: h.conf, value: h.value, locator: x.loc(w.Src)})
		}
	}
}

// labelRoles applies the role rules that read pod-template labels.
func (r *rules) labelRoles(cd *compDetect, c *schemas.Component) {
	if len(c.Labels) == 0 {
		return
	}
	for _, rr := range r.roles {
		if rr.Label == "" {
			continue
		}
		if v, ok := c.Labels[rr.Label]; ok && (len(rr.values) == 0 || rr.values[v]) {
			role := rr.Role
			if role == "" {
				role = v
			}
			cd.roles.add(role)
		}
	}
}

// flagRole applies the role rules that read the flag f (and maybe its
// value); fr is what the rules say of its name.
func flagRole(cd *compDetect, fr *flagRule, f cmdline.Flag) {
	for _, rr := range fr.roles {
		if rr.Value == "" || (f.HasValue && strings.EqualFold(f.Value, rr.Value)) {
			cd.roles.add(rr.Role)
		}
	}
}
