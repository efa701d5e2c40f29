package kube

import (
	"errors"
	"slices"

	"go.uber.org/zap"
	"k8s.io/client-go/tools/cache"

	"github.com/bomstream/bomstream/collector"
)

// upsert records an added or updated object and queues the workloads it
// belongs to (before and after the change).
func (s *session) upsert(obj any) {
	o, ok := obj.(*object)
	if !ok {
		return
	}
	uid := string(o.UID)
	s.mu.Lock()
	var tops []string
	if old := s.objs[uid]; old != nil {
		tops = append(tops, s.topLocked(old))
		tops = append(tops, s.indexLocked(old, false)...)
		s.unlinkLocked(old)
	}
	s.objs[uid] = o
	if o.owner != nil {
		s.children[o.owner.UID] = append(s.children[o.owner.UID], uid)
	}
	if f := s.fetched[uid]; f != nil && f.Generation != o.Generation {
		delete(s.fetched, uid)
	}
	tops = append(tops, s.indexLocked(o, true)...)
	tops = append(tops, s.topLocked(o))
	s.mu.Unlock()
	s.enqueue(tops...)
}

// remove forgets a deleted object and queues the workloads it belonged
// to, and itself (a workload that is gone).
func (s *session) remove(obj any) {
	var o *object
	switch x := obj.(type) {
	case *object:
		o = x
	case cache.DeletedFinalStateUnknown:
		o, _ = x.Obj.(*object)
	}
	if o == nil {
		return
	}
	uid := string(o.UID)
	s.mu.Lock()
	tops := []string{s.topLocked(o), uid}
	if cur := s.objs[uid]; cur != nil {
		tops = append(tops, s.indexLocked(cur, false)...)
		s.unlinkLocked(cur)
		delete(s.objs, uid)
	}
	delete(s.fetched, uid)
	s.mu.Unlock()
	s.enqueue(tops...)
}

// unlinkLocked removes o from its owner's children.
func (s *session) unlinkLocked(o *object) {
	if o.owner == nil {
		return
	}
	kids := slices.DeleteFunc(s.children[o.owner.UID], func(uid string) bool { return uid == string(o.UID) })
	if len(kids) == 0 {
		delete(s.children, o.owner.UID)
	} else {
		s.children[o.owner.UID] = kids
	}
}

// lookupLocked is the object of a uid, as RollUp reads owners.
func (s *session) lookupLocked(uid string) (collector.Object, bool) {
	o := s.objs[uid]
	if o == nil {
		return collector.Object{}, false
	}
	return s.refLocked(o), true
}

// topLocked is the uid of the top-level object o rolls up into, "" when it
// cannot be named yet (its owner is not seen) or the owners loop.
func (s *session) topLocked(o *object) string {
	top, err := s.c.norm.RollUp(s.refLocked(o), s.lookupLocked)
	var unseen *collector.UnseenOwnerError
	switch {
	case errors.As(err, &unseen) && s.genericKind(unseen.Owner.APIVersion, unseen.Owner.Kind):
		// An owner of a kind with a profile, but no watch to read it:
		// the owner is reported generically, by its reference.
		return unseen.Owner.UID
	case err != nil:
		if errors.Is(err, collector.ErrOwnerCycle) {
			s.c.log.Warn("skipped", zap.Error(err))
		}
		return ""
	}
	return top.UID
}
