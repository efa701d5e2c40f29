package kube

import (
	"slices"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

// What a workload reads of other objects, and what reads it, in a cluster.
//
// Linked kinds (a KServe runtime, a Seldon Model, a TrainedModel) are kept
// whole and indexed by namespace and name: they are what the session's
// collector.Lookup serves. A workload of a linking kind (an
// InferenceService, a Seldon Server) is normalized again, with that
// Lookup, each time it is decided, and every change of a linked object
// queues the linking workloads of its namespace (every namespace for a
// cluster-scoped kind): an edit of a runtime is a change of the
// InferenceServices that run on it.
//
// A claim (an Argo Rollout's spec.workloadRef) makes the claimed object
// part of its claimer: its pods roll up into the claimer, and its
// components join the claimer's inputs (collector.Normalizer.Claim).
//
// A pod, or a workload of a known kind, controlled by an owner of a kind
// no profile describes belongs to a generic workload: that owner, known
// only by the owner references (collector.Normalizer.Generic). It is
// reported when one of its containers may serve a model.

// linkKey names an object of a linked or claimable kind.
func linkKey(group, kind, namespace, name string) string {
	return group + "\x00" + kind + "\x00" + namespace + "\x00" + name
}

func kindKey(group, kind, namespace string) string { return group + "\x00" + kind + "\x00" + namespace }

// indexLocked adds o to the session's indexes, or removes it (add false).
// It returns the uids whose decision o changes: the linking workloads of
// its namespace when o is linked, its claimer and what it claims.
func (s *session) indexLocked(o *object, add bool) []string {
	var affected []string
	group := groupOf(o.APIVersion)
	uid := string(o.UID)
	if add {
		s.cms.setReads(uid, s.readsOfLocked(o))
	} else {
		s.cms.setReads(uid, nil)
	}
	if o.linked {
		k := kindKey(group, o.Kind, o.Namespace)
		if add {
			if s.linkIdx[k] == nil {
				s.linkIdx[k] = map[string]*object{}
			}
			s.linkIdx[k][o.Name] = o
		} else if s.linkIdx[k][o.Name] == o {
			delete(s.linkIdx[k], o.Name)
		}
		for ns, uids := range s.linking {
			if ns == o.Namespace || o.Namespace == "" {
				for u := range uids {
					affected = append(affected, u)
				}
			}
		}
	}
	if o.linking {
		if add {
			if s.linking[o.Namespace] == nil {
				s.linking[o.Namespace] = map[string]bool{}
			}
			s.linking[o.Namespace][uid] = true
		} else {
			delete(s.linking[o.Namespace], uid)
		}
	}
	if k, ok := s.c.norm.KindOf(group, o.Kind); ok && k.Claimable {
		key := linkKey(group, o.Kind, o.Namespace, o.Name)
		if add {
			s.named[key] = uid
		} else if s.named[key] == uid {
			delete(s.named, key)
		}
		if c := s.claims[key]; c != "" {
			affected = append(affected, c)
		}
	}
	if o.inputs != nil {
		for _, ref := range collector.Claims(o.inputs) {
			key := linkKey(groupOf(ref.APIVersion), ref.Kind, o.Namespace, ref.Name)
			if add {
				s.claims[key] = uid
			} else if s.claims[key] == uid {
				delete(s.claims, key)
			}
			if claimed := s.named[key]; claimed != "" {
				affected = append(affected, claimed)
			}
		}
	}
	return affected
}

// claimerLocked is the object that claims o, if any.
func (s *session) claimerLocked(o *object) *object {
	if len(s.claims) == 0 {
		return nil
	}
	c := s.claims[linkKey(groupOf(o.APIVersion), o.Kind, o.Namespace, o.Name)]
	if c == "" || c == string(o.UID) {
		return nil
	}
	return s.objs[c]
}

// refLocked is o as the roll-up sees it: an object some workload claims is
// controlled by that workload.
func (s *session) refLocked(o *object) collector.Object {
	r := o.ref()
	if c := s.claimerLocked(o); c != nil {
		r.Owner = &collector.OwnerRef{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name, UID: string(c.UID)}
	}
	return r
}

// genericChild reports whether o is controlled by an owner of a kind no
// profile describes, or of one no watch reads (its CRD serves no version
// the profile reads): it belongs to that owner's generic workload.
func (s *session) genericChild(o *object) bool {
	if o.owner == nil {
		return false
	}
	return s.genericKind(o.owner.APIVersion, o.owner.Kind)
}

// genericKind reports a kind the session reports generically: no profile
// describes it, or its profile's kind is not watched.
func (s *session) genericKind(apiVersion, kind string) bool {
	group := groupOf(apiVersion)
	k, known := s.c.norm.KindOf(group, kind)
	if !known {
		return true
	}
	if !k.Owner {
		return false
	}
	return s.watches[collector.Kind{Group: group, Kind: kind}.String()] == nil
}

// topLevelLocked reports whether o is a workload of its own here: not
// rolled up, not claimed, not part of a generic owner, in scope.
func (s *session) topLevelLocked(o *object) bool {
	return !o.rolledUp && !s.genericChild(o) && s.claimerLocked(o) == nil && s.inScopeLocked(o)
}

// sessionLookup is the session's collector.Lookup over the linked kinds it
// keeps whole. It is used with s.mu held.
type sessionLookup struct{ s *session }

func (l sessionLookup) Get(apiVersion, kind, namespace, name string) (map[string]any, bool) {
	if kind == configMapKind && groupOf(apiVersion) == "" {
		return l.s.cms.get(configMapKey(namespace, name))
	}
	o := l.s.linkIdx[kindKey(groupOf(apiVersion), kind, namespace)][name]
	if o == nil || o.raw == nil {
		return nil, false
	}
	return o.raw, true
}

func (l sessionLookup) List(apiVersion, kind, namespace string) []map[string]any {
	objs := l.s.linkIdx[kindKey(groupOf(apiVersion), kind, namespace)]
	names := make([]string, 0, len(objs))
	for n, o := range objs {
		if o.raw != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		out = append(out, objs[n].raw)
	}
	return out
}

// inputsLocked is what a top-level object's BOM is rendered from: its own
// inputs, read again with the Lookup when its kind links to others, plus
// the components of what it claims; and the uids whose pods report its
// digests. ok is false when it has none (a malformed object).
func (s *session) inputsLocked(o, base *object) (*schemas.Inputs, []string, bool) {
	in := base.inputs
	if in == nil {
		return nil, nil, false
	}
	switch {
	case base.linking && base.raw != nil:
		again, err := s.c.norm.NormalizeWith(base.raw, "cluster", sessionLookup{s})
		if err != nil {
			return nil, nil, false
		}
		in = again
	case base.draft != nil:
		in = s.c.norm.Complete(base.draft, sessionLookup{s})
	}
	roots := []string{string(o.UID)}
	for _, ref := range collector.Claims(in) {
		uid := s.named[linkKey(groupOf(ref.APIVersion), ref.Kind, o.Namespace, ref.Name)]
		part := s.objs[uid]
		if part == nil {
			continue
		}
		if part.metaOnly {
			part = s.fetched[uid]
		}
		if part == nil || part.inputs == nil {
			continue
		}
		partIn := part.inputs
		if part.draft != nil {
			partIn = s.c.norm.Complete(part.draft, sessionLookup{s})
		}
		in = s.c.norm.Claim(in, partIn)
		roots = append(roots, uid)
	}
	return in, roots, true
}

// needsFetchLocked reports an object whose inputs need a GET: a
// top-level one watched as metadata only (a ReplicaSet no Deployment
// controls), or a workload whose owner's kind has a profile but no watch,
// which the transform took for rolled up and did not read.
func (s *session) needsFetchLocked(o *object) bool {
	switch {
	case o.metaOnly && !o.rolledUp:
		return true
	case o.rolledUp && o.inputs == nil && s.genericChild(o):
		k, _ := s.c.norm.KindOf(groupOf(o.APIVersion), o.Kind)
		return k.Workload
	}
	return false
}

// genericKidsLocked are the watched objects an owner of no known kind (or
// of a kind no watch reads) controls, with the owner reference they name
// it by.
func (s *session) genericKidsLocked(owner string) ([]*object, *collector.OwnerRef) {
	var kids []*object
	var ref *collector.OwnerRef
	for _, uid := range s.children[owner] {
		o := s.objs[uid]
		if o == nil || !s.genericChild(o) || !s.inScopeLocked(o) {
			continue
		}
		if k, _ := s.c.norm.KindOf(groupOf(o.APIVersion), o.Kind); !k.Workload {
			continue
		}
		kids = append(kids, o)
		if ref == nil {
			ref = o.owner
		}
	}
	return kids, ref
}

// genericEventLocked is the event of the generic workload owner, from the
// objects it controls; false when none of them may serve a model.
func (s *session) genericEventLocked(owner string, now time.Time) (schemas.WorkloadChange, []schemas.ImageDigest, bool) {
	kids, ref := s.genericKidsLocked(owner)
	if ref == nil {
		return schemas.WorkloadChange{}, nil, false
	}
	var parts []*schemas.Inputs
	for _, k := range kids {
		base := k
		if k.metaOnly || k.inputs == nil {
			base = s.fetched[string(k.UID)]
		}
		if base == nil {
			continue
		}
		in, _, ok := s.inputsLocked(k, base)
		if ok {
			parts = append(parts, in)
		}
	}
	if len(parts) == 0 {
		return schemas.WorkloadChange{}, nil, false
	}
	w := schemas.Workload{Cluster: s.c.norm.Cluster(), Namespace: kids[0].Namespace, APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
	in := s.c.norm.Generic(w, parts)
	if !s.c.norm.MayServe(in) {
		return schemas.WorkloadChange{}, nil, false
	}
	in.Digests = collector.Digests(in, s.podImagesLocked(owner), s.retained[owner])
	ev, err := schemas.NewObserved(s.c.Source(), now, in)
	if err != nil {
		s.c.log.Debug("generic workload skipped", zap.Error(err))
		return schemas.WorkloadChange{}, nil, false
	}
	s.generic[owner] = collector.Kind{Group: groupOf(ref.APIVersion), Kind: ref.Kind}.String()
	return ev, in.Digests, true
}

// genericOwnersLocked are the owners of no known kind that control some
// watched object in scope, sorted.
func (s *session) genericOwnersLocked() []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range s.objs {
		if s.genericChild(o) && s.inScopeLocked(o) && !seen[o.owner.UID] {
			seen[o.owner.UID] = true
			out = append(out, o.owner.UID)
		}
	}
	slices.Sort(out)
	return out
}

// countGenericLocked sets the generic workload gauge from s.generic.
func (s *session) countGenericLocked() {
	counts := map[string]int{}
	for _, k := range s.generic {
		counts[k]++
	}
	s.c.genericGauge.Reset()
	for k, n := range counts {
		s.c.genericGauge.WithLabelValues(k).Set(float64(n))
	}
}
