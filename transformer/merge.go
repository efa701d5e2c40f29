package transformer

import (
	"slices"
	"sort"

	"github.com/bomstream/bomstream/schemas"
)

// merge folds one component's hits into the workload's; each hit takes the
// component's roles. The first hit of a runtime becomes the workload's
// (nothing reads a component's hits once they are merged).
func (d *detection) merge(cd *compDetect) {
	for _, h := range cd.hits {
		name := h.rule.Name
		g, ok := d.runtimes.get(name)
		if !ok {
			d.runtimes.put(name, h)
			h.roles.addAll(cd.roles)
			continue
		}
		g.conf = stronger(g.conf, h.conf)
		g.versions = append(g.versions, h.versions...)
		g.proofs = append(g.proofs, h.proofs...)
		for _, b := range h.backends {
			g.backends = strengthen(g.backends, b.name, b.conf)
		}
		g.wrappedBy.addAll(&h.wrappedBy)
		g.roles.addAll(cd.roles)
		g.models.addAll(&h.models)
		g.settings = append(g.settings, h.settings...)
	}
}

// spreadRoles gives the models and images of each component (cs[i] read
// into comps[i]) the roles of that component, once they are final, and
// the workload's models every role.
func (r *rules) spreadRoles(d *detection, wl *compDetect, comps []compDetect, cs []schemas.Component) {
	for _, key := range wl.models.list() {
		if m, ok := d.models.get(key); ok {
			m.roles.addAll(d.roles)
		}
	}
	for ci := range comps {
		cd := &comps[ci]
		for k := range cs[ci].Containers {
			ct := &cs[ci].Containers[k]
			if ct.Image == "" {
				continue
			}
			if ch, ok := d.containers.get(imageKey(ct.Image, r.image(ct.Image))); ok {
				ch.roles.addAll(cd.roles)
			}
		}
		for _, key := range cd.models.list() {
			if m, ok := d.models.get(key); ok {
				m.roles.addAll(cd.roles)
			}
		}
	}
}

// unusedModels records the models no runtime uses: the workload depends on
// them.
func (d *detection) unusedModels() {
	for _, me := range d.models.entries {
		key := me.key
		used := false
		for _, re := range d.runtimes.entries {
			if re.item.models.has(key) {
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
	for _, e := range d.models.entries {
		if e.item.strong {
			return true
		}
	}
	return false
}
