package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

// enqueue queues workloads to be decided after the debounce. Before the
// first pass nothing is queued: that pass reads the whole graph as it is
// then, so queueing every object of the initial list would only decide each
// workload a second time (and grow the queue's maps to the size of the
// cluster, which Go maps never give back).
func (s *session) enqueue(uids ...string) {
	if !s.started.Load() {
		return
	}
	for _, uid := range uids {
		if uid != "" {
			s.queue.AddAfter(uid, s.c.cfg.Debounce)
		}
	}
}

// work processes one queued workload; false when the queue is shut down.
func (s *session) work(ctx context.Context) bool {
	uid, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(uid)
	if err := s.process(ctx, uid); err != nil && ctx.Err() == nil {
		s.c.log.Warn("publish failed; retrying", zap.String("uid", uid), zap.Error(err))
		s.queue.AddAfter(uid, 5*time.Second+jitter(5*time.Second))
	}
	return true
}

// process decides the state of one workload and publishes it when it
// changed; a workload that is gone waits for the next tombstone pass.
func (s *session) process(ctx context.Context, uid string) error {
	s.mu.Lock()
	need := []string{uid}
	if s.objs[uid] == nil {
		kids, _ := s.genericKidsLocked(uid)
		for _, k := range kids {
			need = append(need, string(k.UID))
		}
	}
	s.mu.Unlock()
	if err := s.ensureFetched(ctx, need); err != nil {
		return err
	}
	if err := s.ensureConfigMaps(ctx, need); err != nil {
		return err
	}
	s.mu.Lock()
	o := s.objs[uid]
	var (
		ev      schemas.WorkloadChange
		digests []schemas.ImageDigest
		ok      bool
	)
	switch {
	case o == nil:
		// Maybe the owner of no known kind of some watched objects.
		if ev, digests, ok = s.genericEventLocked(uid, time.Now()); !ok {
			s.gone[uid] = true
			delete(s.generic, uid)
			s.countGenericLocked()
			s.mu.Unlock()
			return nil
		}
		s.countGenericLocked()
	case !s.topLevelLocked(o):
		s.gone[uid] = true
		s.mu.Unlock()
		return nil
	default:
		ev, digests, ok = s.eventLocked(o, time.Now())
	}
	delete(s.gone, uid)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if _, err := s.c.rec.Observe(ctx, ev); err != nil {
		return err
	}
	s.mu.Lock()
	s.retained[uid] = digests
	s.mu.Unlock()
	return nil
}

// desired is the event of every top-level workload in scope, and why the
// objects of workload kinds that have none were skipped.
func (s *session) desired(ctx context.Context) ([]schemas.WorkloadChange, []string) {
	s.mu.Lock()
	var need []string
	for uid, o := range s.objs {
		if s.fetched[uid] == nil && s.needsFetchLocked(o) {
			need = append(need, uid)
		}
	}
	s.mu.Unlock()
	if err := s.ensureFetched(ctx, need); err != nil {
		s.c.log.Warn("read top-level objects", zap.Error(err))
	}
	s.mu.Lock()
	readers := s.configMapReadersLocked()
	s.mu.Unlock()
	if err := s.ensureConfigMaps(ctx, readers); err != nil {
		s.c.log.Warn("read configmaps", zap.Error(err))
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var events []schemas.WorkloadChange
	var skipped []string
	for _, o := range s.objs {
		if !s.topLevelLocked(o) {
			continue
		}
		ev, digests, ok := s.eventLocked(o, now)
		if !ok {
			if err := s.skipOf(o); err != nil {
				skipped = append(skipped, err.Error())
			}
			continue
		}
		s.retained[string(o.UID)] = digests
		events = append(events, ev)
	}
	clear(s.generic)
	for _, owner := range s.genericOwnersLocked() {
		if ev, digests, ok := s.genericEventLocked(owner, now); ok {
			s.retained[owner] = digests
			events = append(events, ev)
		}
	}
	s.countGenericLocked()
	slices.SortFunc(events, func(a, b schemas.WorkloadChange) int { return compareStrings(a.Subject, b.Subject) })
	slices.Sort(skipped)
	return events, skipped
}

// skipOf is why o has no inputs: the reason of its full read when it
// was read in full.
func (s *session) skipOf(o *object) error {
	if f := s.fetched[string(o.UID)]; f != nil {
		return f.skip
	}
	return o.skip
}

// eventLocked builds the event of a top-level object: its inputs plus the
// digests its pods report.
func (s *session) eventLocked(o *object, now time.Time) (schemas.WorkloadChange, []schemas.ImageDigest, bool) {
	uid := string(o.UID)
	base := o
	if o.metaOnly {
		base = s.fetched[uid]
		if base == nil {
			return schemas.WorkloadChange{}, nil, false
		}
	}
	if base.inputs == nil {
		if base.skip != nil && s.skipLog[uid] != o.ResourceVersion {
			s.skipLog[uid] = o.ResourceVersion
			s.c.log.Warn("skipped", zap.String("object", o.ref().String()), zap.Error(base.skip))
		}
		return schemas.WorkloadChange{}, nil, false
	}
	full, roots, ok := s.inputsLocked(o, base)
	if !ok {
		return schemas.WorkloadChange{}, nil, false
	}
	in := *full
	in.Digests = collector.Digests(full, s.podImagesLocked(roots...), s.retained[uid])
	ev, err := schemas.NewObserved(s.c.Source(), now, &in)
	if err != nil {
		if s.skipLog[uid] != o.ResourceVersion {
			s.skipLog[uid] = o.ResourceVersion
			s.c.log.Warn("skipped", zap.String("object", o.ref().String()), zap.Error(err))
		}
		return schemas.WorkloadChange{}, nil, false
	}
	return ev, in.Digests, true
}

// podImagesLocked collects what the pods under top-level objects report.
func (s *session) podImagesLocked(tops ...string) []collector.PodImage {
	var out []collector.PodImage
	seen := map[string]bool{}
	for _, t := range tops {
		seen[t] = true
	}
	queue := slices.Clone(tops)
	for len(queue) > 0 && len(seen) < 1_000_000 {
		uid := queue[0]
		queue = queue[1:]
		for _, child := range s.children[uid] {
			if seen[child] {
				continue
			}
			seen[child] = true
			if o := s.objs[child]; o != nil {
				out = append(out, o.images...)
				queue = append(queue, child)
			}
		}
	}
	return out
}

// ensureFetched reads in full the top-level objects among uids that were
// watched as metadata only (a ReplicaSet that no Deployment controls).
func (s *session) ensureFetched(ctx context.Context, uids []string) error {
	var errs []error
	for _, uid := range uids {
		s.mu.Lock()
		o := s.objs[uid]
		var r resource
		if o != nil {
			if w := s.watches[collector.Kind{Group: groupOf(o.APIVersion), Kind: o.Kind}.String()]; w != nil {
				r = w.res
			}
		}
		need := o != nil && s.fetched[uid] == nil && r.gvr.Resource != "" && s.needsFetchLocked(o)
		s.mu.Unlock()
		if !need {
			continue
		}
		u, err := s.dyn.Resource(r.gvr).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get %s: %w", o.ref(), err))
			continue
		}
		tf := transformer{norm: s.c.norm, apiVersion: r.gvr.GroupVersion().String(), kind: r.kind}
		if o.rolledUp {
			// Part of an owner no watch reads: read for that owner's
			// generic workload, as if it had no owner.
			u.SetOwnerReferences(nil)
		}
		full := tf.fromMap(u, u.Object)
		s.mu.Lock()
		s.fetched[uid] = full
		if cur := s.objs[uid]; cur != nil {
			s.cms.setReads(uid, s.readsOfLocked(cur))
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// visible reports whether a deletion of w could be seen: its kind is
// watched, listed and healthy, and its namespace's scope is known.
func (s *session) visible(w schemas.Workload) bool {
	label := collector.Kind{Group: groupOf(w.APIVersion), Kind: w.Kind}.String()
	if _, known := s.c.norm.KindOf(groupOf(w.APIVersion), w.Kind); !known {
		// A generic workload is seen through the pods it owns.
		label = collector.Kind{Kind: "Pod"}.String()
	}
	s.mu.Lock()
	kw := s.watches[label]
	s.mu.Unlock()
	if kw == nil || !kw.synced() || !s.c.health.ok(label) {
		return false
	}
	return s.scopeKnown()
}

// flushGone tombstones, as one guarded pass, the workloads seen deleted
// since the last one.
func (s *session) flushGone(ctx context.Context) {
	s.mu.Lock()
	var uids []string
	for uid := range s.gone {
		if o := s.objs[uid]; o == nil && s.generic[uid] == "" || o != nil && !s.topLevelLocked(o) {
			uids = append(uids, uid)
		} else {
			delete(s.gone, uid)
		}
	}
	s.mu.Unlock()
	if len(uids) == 0 {
		return
	}
	res, err := s.c.rec.Remove(ctx, uids, s.visible, time.Now())
	if err != nil {
		s.c.log.Warn("tombstones", zap.Error(err))
		return
	}
	if res.Held > 0 {
		return // the next pass confirms them, or not
	}
	s.mu.Lock()
	for _, uid := range uids {
		delete(s.gone, uid)
		delete(s.retained, uid)
		delete(s.skipLog, uid)
	}
	s.mu.Unlock()
	if res.Tombstones > 0 {
		s.c.log.Info("tombstones written", zap.Int("count", res.Tombstones))
	}
}
