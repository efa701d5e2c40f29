package collector

import (
	"slices"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// Claims: an object that another one takes over by naming it (an Argo
// Rollout's spec.workloadRef names the Deployment whose pod template it
// runs) is part of that workload. It is rolled up only on that fact, never
// because of its kind: a Deployment that no Rollout names is a workload of
// its own.

// profileRule is one rule of a profile that names another kind: a claim
// (claimer) or a bound rule (binder).
type profileRule[R any] struct {
	p *profile
	r *R
}

type (
	claimer = profileRule[claimRule]
	binder  = profileRule[boundRule]
)

// indexRules lists, for each kind the rules of the profiles name (kindOf),
// the profiles' rules that name it, in the order of sortedProfiles.
func indexRules[R any](profiles map[gk]*profile, rules func(*profile) []R, kindOf func(*R) linkKind) map[gk][]profileRule[R] {
	out := map[gk][]profileRule[R]{}
	for _, p := range sortedProfiles(profiles) {
		rs := rules(p)
		for i := range rs {
			k := kindOf(&rs[i]).gk()
			out[k] = append(out[k], profileRule[R]{p: p, r: &rs[i]})
		}
	}
	return out
}

// sortedProfiles is the profiles sorted by group and kind, for indexes
// whose order must not depend on a map's.
func sortedProfiles(profiles map[gk]*profile) []*profile {
	out := make([]*profile, 0, len(profiles))
	for _, p := range profiles {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *profile) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		return strings.Compare(a.kind, b.kind)
	})
	return out
}

// claimName is the name of the object c claims in obj, if it claims one.
func claimName(c *claimRule, obj map[string]any) (string, bool) {
	if c.kindPath != nil {
		if k, ok := scalarAt(*c.kindPath, obj); !ok || k != c.kind.kind {
			return "", false
		}
	}
	name, ok := scalarAt(c.name, obj)
	return name, ok && name != ""
}

// claimedBy names the object that claims the object (group, kind,
// namespace, name), if one in lookup does: "Rollout/chat".
func (n *Normalizer) claimedBy(group, kind, ns, name string, lookup Lookup) (string, bool) {
	if lookup == nil {
		return "", false
	}
	for _, cl := range n.claimers[gk{group, kind}] {
		for _, obj := range lookup.List(cl.p.group+"/", cl.p.kind, ns) {
			if claimed, ok := claimName(cl.r, obj); ok && claimed == name {
				return cl.p.kind + "/" + objName(obj), true
			}
		}
	}
	return "", false
}

// Claims returns the objects the Inputs of a workload say it claims (the
// Owned entries its profile's claims added): the cluster source rolls them
// up into it and adds their components with Claim.
func Claims(in *schemas.Inputs) []schemas.ObjectRef { return in.Owned }

// Claim adds part, the Inputs of an object that in claims as its own
// profile reads them, to a copy of in: part's components follow in's,
// their locators starting with "<Kind>/<name>:", and part's digests join
// in's. The result is bounded like any Inputs.
func (n *Normalizer) Claim(in, part *schemas.Inputs) *schemas.Inputs {
	out := *in
	out.Components = cloneComponents(in.Components)
	pre := part.Workload.Kind + "/" + part.Workload.Name + ":"
	for _, c := range cloneComponents(part.Components) {
		prefixComponent(&c, pre)
		out.Components = append(out.Components, c)
	}
	out.Fields = sortFields(append(slices.Clone(in.Fields), prefixFields(slices.Clone(part.Fields), pre)...))
	out.Digests = pinnedDigests(out.Components)
	n.cfg.Bounds.bound(&out)
	return &out
}

// Binders: an object bound to a workload (a Seldon Model a Server loads, a
// TrainedModel loaded into an InferenceService) is part of that workload
// when one is there to take it; with none, it is reported on its own, so
// that no model is absent from the inventory because its server is
// somewhere else.

// boundTo names the workload the object obj (of group and kind, in ns)
// is bound to, if one in lookup takes it: "Server/mlserver".
func (n *Normalizer) boundTo(group, kind, ns string, obj map[string]any, lookup Lookup) (string, bool) {
	if lookup == nil {
		return "", false
	}
	for _, bd := range n.binders[gk{group, kind}] {
		for _, owner := range lookup.List(bd.p.group+"/", bd.p.kind, ns) {
			w := walker{n: n, root: owner, ns: ns}
			if name := objName(owner); w.binds(bd.r, obj, name) {
				return bd.p.kind + "/" + name, true
			}
		}
	}
	return "", false
}
