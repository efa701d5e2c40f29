package transformer

import (
	"slices"
	"sort"
)

// merge folds one component's hits into the workload's; each hit takes the
// component's roles.
func (d *detection) merge(cd *compDetect) {
	for _, h := range cd.hits {
		name := h.rule.Name
		g, ok := d.runtimes.get(name)
		if !ok {
			g = &runtimeHit{rule: h.rule, conf: h.conf}
			d.runtimes.put(name, g)
		}
		g.conf = stronger(g.conf, h.conf)
		g.versions = append(g.versions, h.versions...)
		g.proofs = append(g.proofs, h.proofs...)
		for _, b := range h.backends {
			g.backends = strengthen(g.backends, b.name, b.conf)
		}
		for _, w := range h.wrappedBy.list() {
			g.wrappedBy.add(w)
		}
		for _, role := range cd.roles {
			g.roles.add(role)
		}
		for _, m := range h.models.list() {
			g.models.add(m)
		}
		g.settings = append(g.settings, h.settings...)
	}
}

// spreadRoles gives the models and images of each component the roles of
// that component, and the workload's models every role.
func (d *detection) spreadRoles(wl *compDetect, comps []compDetect) {
	for _, key := range wl.models.list() {
		if m, ok := d.models.get(key); ok {
			for _, role := range d.roles {
				m.roles.add(role)
			}
		}
	}
	for ci := range comps {
		cd := &comps[ci]
		for _, key := range cd.images.list() {
			if ch, ok := d.containers.get(key); ok {
				for _, role := range cd.roles {
					ch.roles.add(role)
				}
			}
		}
		for _, key := range cd.models.list() {
			if m, ok := d.models.get(key); ok {
				for _, role := range cd.roles {
					m.roles.add(role)
				}
			}
		}
	}
}

// unusedModels records the models no runtime uses: the workload depends on
// them.
func (d *detection) unusedModels() {
	for _, key := range d.models.keys {
		used := false
		for _, h := range d.runtimes.items {
			if h.models.has(key) {
				used = true
				break
			}
		}
		if !used {
			d.workloadM.add(key)
		}
	}
}

// bestVersion picks the version with the strongest evidence, then the
// smallest, and lists the others, sorted.
func (h *runtimeHit) bestVersion() (versionClaim, []string) {
	var best versionClaim
	for _, v := range h.versions {
		if best.version == "" || confRank(v.proof.conf) > confRank(best.proof.conf) ||
			confRank(v.proof.conf) == confRank(best.proof.conf) && (v.version < best.version || v.version == best.version && v.proof.locator < best.proof.locator) {
			best = v
		}
	}
	var others []string
	for _, v := range h.versions {
		if v.version != "" && v.version != best.version && !slices.Contains(others, v.version) {
			others = append(others, v.version)
		}
	}
	sort.Strings(others)
	return best, others
}

// strongModel reports whether some model of d stands alone.
func (d *detection) strongModel() bool {
	for _, m := range d.models.items {
		if m.strong {
			return true
		}
	}
	return false
}
