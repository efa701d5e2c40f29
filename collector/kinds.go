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
		if !p.workload && !p.owner {
			continue
		}
		k := Kind{Group: p.group, Kind: p.kind, Workload: p.workload, Owner: p.owner, ClusterScoped: p.clusterScoped}
		for v := range p.versions {
			k.Versions = append(k.Versions, v)
		}
		slices.Sort(k.Versions)
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
	k := Kind{Group: p.group, Kind: p.kind, Workload: p.workload, Owner: p.owner, ClusterScoped: p.clusterScoped}
	for v := range p.versions {
		k.Versions = append(k.Versions, v)
	}
	slices.Sort(k.Versions)
	return k, true
}

// Cluster is the cluster name the Normalizer puts in every identity.
func (n *Normalizer) Cluster() string { return n.cfg.Cluster }
