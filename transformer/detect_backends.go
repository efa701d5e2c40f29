package transformer

import (
	"slices"
	"strings"
)

// resolveBackends pairs wrappers (Dynamo, NIM, KServe) with the engines they
// run in this component: a declared backend, an engine found beside them, an
// engine-only flag, or the wrapper's default. Then the component's settings
// and models go to the engines that run (see assignSettings).
func (r *rules) resolveBackends(cd *compDetect, wl *compDetect) {
	var buf [4]*runtimeHit
	for _, w := range wrappersIn(buf[:0], cd, wl) {
		for _, bp := range cd.backendProofs {
			if bp.name == w.rule.Name {
				w.proofs.add(bp.p)
			}
		}
		declared := r.declaredBackends(cd, w)
		beside := besideEngines(cd, w)
		if declared || beside || r.engineFlagBackends(cd, w) {
			continue
		}
		r.defaultBackend(cd, w)
	}
	assignSettings(cd)
}

// wrappersIn appends to wrappers the wrappers that run in cd, sorted by
// name: its own, and the workload's (wl, when not nil) which get a local
// hit here, so that the component's roles, backends and settings reach
// them.
func wrappersIn(wrappers []*runtimeHit, cd *compDetect, wl *compDetect) []*runtimeHit {
	for _, h := range cd.hits {
		if len(h.rule.wraps) > 0 {
			wrappers = append(wrappers, h)
		}
	}
	if wl != nil {
		for _, h := range wl.hits {
			if len(h.rule.wraps) > 0 && cd.hitOf(h.rule.Name) == nil {
				lh := newRuntimeHit(h.rule, h.conf)
				cd.hits = append(cd.hits, lh)
				wrappers = append(wrappers, lh)
			}
		}
	}
	slices.SortFunc(wrappers, func(a, b *runtimeHit) int { return strings.Compare(a.rule.Name, b.rule.Name) })
	return wrappers
}

// declaredBackends gives the wrapper w the backends claimed for it in cd
// (flags, env, fields, launch patterns), in name order; an engine of ours
// gets a local hit wrapped by w. It reports whether there was any.
func (r *rules) declaredBackends(cd *compDetect, w *runtimeHit) bool {
	wn := w.rule.Name
	var buf [4]wrapperBackend
	claimed := buf[:0] // each engine once (see compDetect.backend)
	for _, b := range cd.backends {
		if b.wrapper == wn {
			claimed = append(claimed, b)
		}
	}
	slices.SortFunc(claimed, func(a, b wrapperBackend) int { return strings.Compare(a.engine, b.engine) })
	for _, b := range claimed {
		eng := b.engine
		w.backends = strengthen(w.backends, eng, b.conf)
		er := r.byName[eng]
		if er == nil || !w.rule.wraps[eng] {
			// A backend that is no engine of ours (huggingface): evidence on the wrapper.
			w.proofs = cd.engineEvidence(w.proofs, eng)
			continue
		}
		eh := cd.runs(er, b.conf)
		eh.proofs = cd.engineEvidence(eh.proofs, eng)
		eh.wrappedBy.add(wn)
	}
	return len(claimed) > 0
}

// engineEvidence appends to ps the evidence naming eng as a wrapper's
// backend in c.
func (c *compDetect) engineEvidence(ps proofs, eng string) proofs {
	for _, ep := range c.engineProofs {
		if ep.name == eng {
			ps.add(ep.p)
		}
	}
	return ps
}

// besideEngines: the engines found beside the wrapper w in cd are its
// backends. It reports whether there was any.
func besideEngines(cd *compDetect, w *runtimeHit) bool {
	found := false
	for _, eh := range cd.hits {
		if en := eh.rule.Name; w.rule.wraps[en] {
			eh.wrappedBy.add(w.rule.Name)
			w.backends = strengthen(w.backends, en, eh.conf)
			found = true
		}
	}
	return found
}

// engineFlagBackends: the engines that engine-only flags suggest, in name
// order, are the wrapper's inferred backends. It reports whether there was
// any.
func (r *rules) engineFlagBackends(cd *compDetect, w *runtimeHit) bool {
	engs := slices.Clone(cd.engineFlags)
	slices.SortFunc(engs, func(a, b namedProof) int { return strings.Compare(a.name, b.name) })
	found := false
	for _, ef := range engs {
		if w.rule.wraps[ef.name] {
			eh := cd.hit(r.byName[ef.name], confInferred, ef.p)
			eh.wrappedBy.add(w.rule.Name)
			w.backends = strengthen(w.backends, ef.name, confInferred)
			found = true
		}
	}
	return found
}

// defaultBackend gives the wrapper w its default backend, inferred, when
// the component has one of the default's roles (or it names none).
func (r *rules) defaultBackend(cd *compDetect, w *runtimeHit) {
	def := w.rule.Default
	if def == nil || r.byName[def.Backend] == nil {
		return
	}
	ok := len(def.Roles) == 0
	for _, role := range def.Roles {
		ok = ok || cd.roles.has(role)
	}
	if !ok {
		return
	}
	wn := w.rule.Name
	eh := cd.hit(r.byName[def.Backend], confInferred, proof{conf: confInferred, value: "default backend of " + wn, locator: "kind"})
	eh.wrappedBy.add(wn)
	w.backends = strengthen(w.backends, def.Backend, confInferred)
}

// assignSettings: settings and models belong to the engine that runs: the
// engines when there are any, else the wrappers. The component's roles
// reach its hits when they are merged.
func assignSettings(cd *compDetect) {
	engineRuns := false
	for _, h := range cd.hits {
		if len(h.rule.wraps) == 0 {
			engineRuns = true
			break
		}
	}
	for _, h := range cd.hits {
		if engineRuns && len(h.rule.wraps) > 0 {
			continue
		}
		if len(h.settings) == 0 {
			// Shared, capped: settings are only ever appended to.
			h.settings = slices.Clip(cd.settings)
		} else {
			h.settings = append(h.settings, cd.settings...)
		}
		h.models.addAll(&cd.models)
	}
}
