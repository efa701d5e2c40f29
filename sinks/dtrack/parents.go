package dtrack

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	dtrack "github.com/DependencyTrack/client-go"
	"github.com/google/uuid"
	"go.uber.org/zap"
)

// Collection logics (Dependency-Track 4.13+; 5.x has no NONE: a plain
// project's collectionLogic is null).
const (
	collectDirect  = "AGGREGATE_DIRECT_CHILDREN"
	collectWithTag = "AGGREGATE_DIRECT_CHILDREN_WITH_TAG"
)

// parentProject is what the sink reads and writes of a cluster or
// namespace project; client-go's Project has no collectionLogic.
type parentProject struct {
	UUID            uuid.UUID    `json:"uuid,omitempty"`
	Name            string       `json:"name,omitempty"`
	Version         string       `json:"version,omitempty"`
	Description     string       `json:"description,omitempty"`
	Tags            []dtrack.Tag `json:"tags,omitempty"`
	Active          bool         `json:"active"`
	IsLatest        *bool        `json:"isLatest,omitempty"`
	Parent          *parentRef   `json:"parent,omitempty"`
	CollectionLogic string       `json:"collectionLogic,omitempty"`
	CollectionTag   *dtrack.Tag  `json:"collectionTag,omitempty"`
}

type parentRef struct {
	UUID uuid.UUID `json:"uuid"`
}

// patch sets p's active flag with PATCH, sending isLatest as it is: PATCH
// takes an absent active as true and an absent isLatest as false (see
// DEPENDENCY-TRACK.md). 304 (nothing changed) is success.
func (s *Sink) patch(ctx context.Context, c *dtrack.Client, p dtrack.Project, active bool) error {
	latest := p.IsLatest != nil && *p.IsLatest
	_, err := c.Project.Patch(ctx, p.UUID, dtrack.Project{Active: active, IsLatest: &latest})
	if code, _ := apiStatus(err); code == http.StatusNotModified {
		return nil
	}
	return classify(err, fmt.Sprintf("update project %s", p.UUID), PermPortfolioManagement)
}

// ensureParents returns the UUID of the project the workload's project goes
// under (its namespace's, or its cluster's when cluster-scoped), creating
// the cluster and namespace projects when missing.
func (s *Sink) ensureParents(ctx context.Context, c *dtrack.Client, t target) (*uuid.UUID, error) {
	cl, err := s.ensureParent(ctx, c, t.cluster, nil, "Kubernetes cluster")
	if err != nil || t.namespace.name == "" {
		return cl, err
	}
	return s.ensureParent(ctx, c, t.namespace, cl, "Kubernetes namespace")
}

// ensureParent returns the UUID of parent project r, from the cache or
// Dependency-Track: it creates the project when missing, reactivates it
// when inactive (an inactive project takes no new children), and with
// parents: collection makes a plain one a collection project.
func (s *Sink) ensureParent(ctx context.Context, c *dtrack.Client, r ref, parent *uuid.UUID, what string) (*uuid.UUID, error) {
	key := r.name + "\x00" + r.version
	s.mu.Lock()
	if id, ok := s.parents[key]; ok {
		s.mu.Unlock()
		return &id, nil
	}
	mu := s.parentMu[key]
	if mu == nil {
		mu = &sync.Mutex{}
		s.parentMu[key] = mu
	}
	s.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	s.mu.Lock()
	id, ok := s.parents[key]
	s.mu.Unlock()
	if ok {
		return &id, nil
	}
	p, found, err := s.lookupParent(ctx, r)
	if err != nil {
		return nil, err
	}
	if !found {
		if p, err = s.createParent(ctx, r, parent, what); err != nil {
			return nil, err
		}
	}
	if fix := s.parentFix(p); fix != nil {
		_, err := s.call(ctx, http.MethodPatch, "/api/v1/project/"+p.UUID.String(), fix, nil)
		if code, _ := apiStatus(err); code != http.StatusNotModified && err != nil {
			return nil, classify(err, fmt.Sprintf("update project %q version %q", r.name, r.version), PermPortfolioManagement)
		}
		s.log.Info("parent project updated", zap.String("project", r.name), zap.String("version", r.version),
			zap.Bool("reactivated", !p.Active), zap.String("collectionLogic", fix.CollectionLogic))
	}
	s.mu.Lock()
	s.parents[key] = p.UUID
	s.mu.Unlock()
	id = p.UUID
	return &id, nil
}

// parentFix is the PATCH body that makes existing parent p what the sink
// needs (active; a collection project with parents: collection), or nil.
func (s *Sink) parentFix(p parentProject) *parentProject {
	logic, tag := s.collection()
	toCollection := logic != "" && (p.CollectionLogic != logic || (tag != nil && (p.CollectionTag == nil || p.CollectionTag.Name != tag.Name)))
	if p.Active && !toCollection {
		return nil
	}
	latest := p.IsLatest != nil && *p.IsLatest
	fix := &parentProject{Active: true, IsLatest: &latest}
	if toCollection {
		fix.CollectionLogic, fix.CollectionTag = logic, tag
	}
	return fix
}

// collection is the collection logic (and tag) parents get, or "".
func (s *Sink) collection() (string, *dtrack.Tag) {
	switch {
	case s.cfg.parents() != ParentsCollection:
		return "", nil
	case s.cfg.CollectionTag != "":
		return collectWithTag, &dtrack.Tag{Name: normalizeTags([]string{s.cfg.CollectionTag})[0].Name}
	}
	return collectDirect, nil
}

func (s *Sink) lookupParent(ctx context.Context, r ref) (parentProject, bool, error) {
	var p parentProject
	q := url.Values{"name": {r.name}, "version": {r.version}}
	_, err := s.call(ctx, http.MethodGet, "/api/v1/project/lookup?"+q.Encode(), nil, &p)
	if code, _ := apiStatus(err); code == http.StatusNotFound {
		return p, false, nil
	}
	if err != nil {
		return p, false, classify(err, fmt.Sprintf("look up project %q version %q", r.name, r.version), PermViewPortfolio)
	}
	return p, true, nil
}

// createParent creates parent project r (a collection project with
// parents: collection); a 409 means another replica created it meanwhile.
func (s *Sink) createParent(ctx context.Context, r ref, parent *uuid.UUID, what string) (parentProject, error) {
	in := parentProject{Name: r.name, Version: r.version, Description: what + " (created by bomstream)",
		Tags: normalizeTags(r.tags), Active: true}
	in.CollectionLogic, in.CollectionTag = s.collection()
	if parent != nil {
		in.Parent = &parentRef{UUID: *parent}
	}
	var p parentProject
	_, err := s.call(ctx, http.MethodPut, "/api/v1/project", in, &p)
	if code, _ := apiStatus(err); code == http.StatusConflict {
		p, found, err := s.lookupParent(ctx, r)
		if err == nil && !found {
			err = fmt.Errorf("create project %q version %q: it exists (409) but cannot be found", r.name, r.version)
		}
		return p, err
	}
	if err != nil {
		return p, classify(err, fmt.Sprintf("create project %q version %q", r.name, r.version), PermPortfolioManagement)
	}
	s.log.Info("project created", zap.String("project", r.name), zap.String("version", r.version), zap.String("uuid", p.UUID.String()),
		zap.String("collectionLogic", in.CollectionLogic))
	return p, nil
}

// forgetParents drops t's parents from the cache.
func (s *Sink) forgetParents(t target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parents, t.cluster.name+"\x00"+t.cluster.version)
	delete(s.parents, t.namespace.name+"\x00"+t.namespace.version)
}

// retireParents deactivates t's namespace project, then its cluster
// project, when no child of it is active any more (the last workload of a
// namespace was deleted). It lists the children page by page. A parent
// with an active child is never deactivated: the sink looks first, and
// Dependency-Track refuses it anyway (409), which ends the walk quietly.
// The next export under a retired parent reactivates it (ensureParent).
func (s *Sink) retireParents(ctx context.Context, t target) error {
	for _, r := range []ref{t.namespace, t.cluster} {
		if r.name == "" {
			continue
		}
		p, found, err := s.lookupParent(ctx, r)
		if err != nil || !found || !p.Active {
			return err
		}
		active, err := s.hasActiveChild(ctx, p.UUID)
		if err != nil || active {
			return err
		}
		latest := p.IsLatest != nil && *p.IsLatest
		_, err = s.call(ctx, http.MethodPatch, "/api/v1/project/"+p.UUID.String(), parentProject{Active: false, IsLatest: &latest}, nil)
		switch code, msg := apiStatus(err); {
		case code == http.StatusConflict && msg == textActiveChildren:
			return nil
		case code == http.StatusNotModified:
		case err != nil:
			return classify(err, fmt.Sprintf("deactivate project %q version %q", r.name, r.version), PermPortfolioManagement)
		}
		s.forgetParents(t)
		s.log.Info("parent project deactivated: no active child left", zap.String("project", r.name), zap.String("version", r.version))
	}
	return nil
}

// childrenPage is how many children one request lists (Alpine's default).
const childrenPage = 100

// hasActiveChild pages through GET /api/v1/project/{uuid}/children until
// it finds an active child or the X-Total-Count is reached.
func (s *Sink) hasActiveChild(ctx context.Context, id uuid.UUID) (bool, error) {
	for page, seen := 1, 0; ; page++ {
		var kids []struct {
			Active bool `json:"active"`
		}
		q := url.Values{"pageNumber": {strconv.Itoa(page)}, "pageSize": {strconv.Itoa(childrenPage)}}
		h, err := s.call(ctx, http.MethodGet, "/api/v1/project/"+id.String()+"/children?"+q.Encode(), nil, &kids)
		if err != nil {
			return false, classify(err, fmt.Sprintf("list the children of project %s", id), PermViewPortfolio)
		}
		for _, k := range kids {
			if k.Active {
				return true, nil
			}
		}
		seen += len(kids)
		total, err := strconv.Atoi(h.Get("X-Total-Count"))
		if err != nil || len(kids) == 0 || seen >= total {
			return false, nil
		}
	}
}
