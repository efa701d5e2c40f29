package collector

import (
	"slices"
	"strings"
)

// Kind is one kind profile as a watcher needs it: which resource to watch
// and what its objects are to the roll-up.
type Kind struct {
	Group, Kind string
	// Versions are the versions the profile reads; empty means any.
	Versions []string
	// Workload: objects of this kind that no known owner controls are
	// workloads with a BOM of their own.
	Workload bool
	// Owner: objects controlled by one of this kind roll up into it.
	Owner bool
	// ClusterScoped: the objects have no namespace.
	ClusterScoped bool
	// Linked: other workloads read objects of this kind (a KServe runtime,
	// a Seldon Model bound to a Server): a cluster source keeps them whole
	// for its Lookup.
	Linked bool
	// Linking: objects of this kind read other objects (links, bound
	// objects): a cluster source normalizes them with its Lookup when it
	// decides them, so that an edit of a linked object is a change.
	Linking bool
	// Claimable: objects of this kind may be claimed by another workload
	// (a Deployment an Argo Rollout names).
	Claimable bool
}

// String is "Kind" for the core group and "Kind.group" otherwise, as the
// label of the kind in metrics and logs.
func (k Kind) String() string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Kind + "." + k.Group
}

// ReadsVersion reports whether the profile reads version v.
func (k Kind) ReadsVersion(v string) bool {
	return len(k.Versions) == 0 || slices.Contains(k.Versions, v)
}

// Kinds lists every profile that is a workload or an owner, sorted by group
// and kind: the kinds a cluster watch needs to see. Kinds that are neither
// (Services, runtime templates) are left out.
func (n *Normalizer) Kinds() []Kind {
	var out []Kind
	for _, p := range n.profiles {
		k := n.kindOf(p)
		if !p.workload && !p.owner && !k.Linked {
			continue
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// KindOf returns the profile of group and kind, if any.
func (n *Normalizer) KindOf(group, kind string) (Kind, bool) {
	p := n.profiles[gk{group, kind}]
	if p == nil {
		return Kind{}, false
	}
	return n.kindOf(p), true
}

func (n *Normalizer) kindOf(p *profile) Kind {
	key := gk{p.group, p.kind}
	k := Kind{Group: p.group, Kind: p.kind, Workload: p.workload, Owner: p.owner, ClusterScoped: p.clusterScoped,
		Linked: n.linked[key], Claimable: len(n.claimers[key]) > 0}
	for _, l := range p.links {
		for _, lk := range l.kinds {
			k.Linking = k.Linking || n.linked[lk.gk()]
		}
	}
	for _, b := range p.bound {
		k.Linking = k.Linking || n.linked[b.kind.gk()]
	}
	// A bound kind reads its binders, to know whether one takes it.
	k.Linking = k.Linking || len(n.binders[key]) > 0
	for v := range p.versions {
		k.Versions = append(k.Versions, v)
	}
	slices.Sort(k.Versions)
	return k
}

// linkedKinds are the kinds other profiles read through links or bound
// objects, but for ConfigMaps and Secrets: a cluster source reads no
// ConfigMap (it has no right to), and never a Secret.
func linkedKinds(profiles map[gk]*profile) map[gk]bool {
	out := map[gk]bool{}
	add := func(k gk) {
		if k.group == "" && (k.kind == "ConfigMap" || k.kind == "Secret") {
			return
		}
		out[k] = true
	}
	for _, p := range profiles {
		for _, l := range p.links {
			for _, k := range l.kinds {
				add(k.gk())
			}
		}
		for _, b := range p.bound {
			add(b.kind.gk())
			// The binder is read by the objects it binds.
			add(gk{p.group, p.kind})
		}
	}
	return out
}

// Cluster is the cluster name the Normalizer puts in every identity.
func (n *Normalizer) Cluster() string { return n.cfg.Cluster }
