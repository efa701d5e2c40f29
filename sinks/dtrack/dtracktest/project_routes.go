package dtracktest

import (
	"net/http"
	"strconv"
	"strings"
)

// The routes of /api/v1/project: listing, lookup, children, create, full
// and partial update, delete.

func (s *Server) getProjects(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, ViewPortfolio) == nil {
		return
	}
	q := r.URL.Query()
	name, byName := q.Get("name"), q.Has("name")
	excludeInactive := q.Get("excludeInactive") == "true"
	onlyRoot := q.Get("onlyRoot") == "true"
	s.mu.Lock()
	var all []projectJSON
	for _, p := range s.sorted() {
		if (byName && p.Name != name) || (excludeInactive && !p.Active) || (onlyRoot && p.Parent != "") {
			continue
		}
		all = append(all, s.renderListed(p))
	}
	s.mu.Unlock()
	page := paginate(q, len(all))
	w.Header().Set("X-Total-Count", strconv.Itoa(len(all)))
	out := []projectJSON{}
	if page[0] < len(all) {
		out = all[page[0]:min(page[1], len(all))]
	}
	writeJSON(w, http.StatusOK, out)
}

// paginate returns [from, to) for Alpine's paging parameters (ApiFilter,
// the same code on 4.x and 5.x): offset with limit, size or pageSize
// selects OFFSET mode; pageNumber or page (from 1) selects PAGES mode only
// together with a size, so pageNumber alone still gives the first 100; no
// parameter gives offset 0, limit 100.
func paginate(q map[string][]string, total int) [2]int {
	get := func(keys ...string) int {
		for _, k := range keys {
			if v, ok := q[k]; ok && len(v) > 0 {
				if n, err := strconv.Atoi(v[0]); err == nil && n >= 0 {
					return n
				}
			}
		}
		return -1
	}
	size := get("pageSize", "size", "limit")
	if off := get("offset"); off >= 0 {
		if size <= 0 {
			size = 100
		}
		return [2]int{off, off + size}
	}
	if n := get("pageNumber", "page"); n > 0 && size > 0 {
		return [2]int{(n - 1) * size, n * size}
	}
	return [2]int{0, 100}
}

func (s *Server) lookupProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, ViewPortfolio) == nil {
		return
	}
	q := r.URL.Query()
	s.writeProject(w, func() *project {
		s.lookups[nameKey(q.Get("name"), q.Get("version"))]++
		return s.byName(q.Get("name"), q.Get("version"))
	})
}

// Lookups is the number of GET /api/v1/project/lookup requests for the
// project called name in version (found or not), after authorization.
func (s *Server) Lookups(name, version string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups[nameKey(name, version)]
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, ViewPortfolio) == nil {
		return
	}
	s.writeProject(w, func() *project { return s.projects[r.PathValue("uuid")] })
}

// writeProject answers with the project find returns (called under s.mu),
// or 404 when there is none.
func (s *Server) writeProject(w http.ResponseWriter, find func() *project) {
	s.mu.Lock()
	p := find()
	var out projectJSON
	if p != nil {
		out = s.render(p, true)
	}
	s.mu.Unlock()
	if p == nil {
		writeText(w, http.StatusNotFound, "The project could not be found.")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getChildren(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, ViewPortfolio) == nil {
		return
	}
	uuid := r.PathValue("uuid")
	s.mu.Lock()
	p := s.projects[uuid]
	out := []projectJSON{}
	if p != nil {
		for _, c := range s.sorted() {
			if c.Parent == uuid && (r.URL.Query().Get("excludeInactive") != "true" || c.Active) {
				out = append(out, s.renderListed(c))
			}
		}
	}
	s.mu.Unlock()
	if p == nil {
		writeText(w, http.StatusNotFound, "The UUID of the project could not be found.")
		return
	}
	page := paginate(r.URL.Query(), len(out))
	w.Header().Set("X-Total-Count", strconv.Itoa(len(out)))
	writeJSON(w, http.StatusOK, out[min(page[0], len(out)):min(page[1], len(out))])
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, s.manage("create")...) == nil {
		return
	}
	in, ok := s.decodeProject(w, r)
	if !ok {
		return
	}
	if vs := notBlank("name", in.Name); vs != nil {
		writeViolations(w, vs...)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName(str(in.Name), str(in.Version)) != nil {
		writeText(w, http.StatusConflict, "A project with the specified name already exists.")
		return
	}
	p := &project{
		UUID: newUUID(), Name: str(in.Name), Version: str(in.Version), Description: str(in.Description),
		Group: str(in.Group), Classifier: "APPLICATION", Purl: str(in.Purl), CPE: str(in.CPE),
		SwidTagID: str(in.SwidTagID), Tags: normalizeTags(in.tagNames()), Active: true,
		CollectionLogic: CollectionNone,
	}
	if in.Classifier != nil {
		p.Classifier = *in.Classifier
	}
	if in.CollectionLogic != nil {
		p.CollectionLogic = *in.CollectionLogic
	}
	if in.CollectionTag != nil {
		p.CollectionTag = strings.ToLower(strings.TrimSpace(in.CollectionTag.Name))
	}
	if in.Active != nil && !*in.Active {
		s.setActive(p, false)
	}
	if in.IsLatest != nil {
		p.IsLatest = *in.IsLatest
	}
	if in.Parent != nil && in.Parent.UUID != nil && s.feat.v5 && s.projects[*in.Parent.UUID] == nil {
		writeProblem(w, problem{Status: http.StatusNotFound, Title: "Resource does not exist", Detail: "Parent project could not be found"})
		return
	}
	if in.Parent != nil && in.Parent.UUID != nil {
		// 4.x drops an unknown parent silently.
		if parent := s.projects[*in.Parent.UUID]; parent != nil {
			if !parent.Active {
				writeText(w, http.StatusConflict, "An inactive Parent cannot be selected as parent")
				return
			}
			p.Parent = parent.UUID
		}
	}
	s.add(p)
	writeJSON(w, http.StatusCreated, s.render(p, false))
}

// updateProject is POST /api/v1/project: a full update, so that what the
// body omits (tags, parent, description, ...) is cleared.
func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, s.manage("update")...) == nil {
		return
	}
	in, ok := s.decodeProject(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[str(in.UUID)]
	if p == nil {
		writeText(w, http.StatusNotFound, "The UUID of the project could not be found.")
		return
	}
	name := str(in.Name)
	if name == "" {
		name = p.Name
	}
	if o := s.byName(name, str(in.Version)); o != nil && o != p {
		writeText(w, http.StatusConflict, "A project with the specified name and version already exists.")
		return
	}
	next := *p
	next.Name, next.Version = name, str(in.Version)
	next.Description, next.Group = str(in.Description), str(in.Group)
	next.Purl, next.CPE, next.SwidTagID = str(in.Purl), str(in.CPE), str(in.SwidTagID)
	next.Classifier = "APPLICATION"
	if in.Classifier != nil {
		next.Classifier = *in.Classifier
	}
	next.Active = in.Active == nil || *in.Active
	next.IsLatest = in.IsLatest != nil && *in.IsLatest
	next.Tags = normalizeTags(in.tagNames())
	next.Parent = ""
	if in.CollectionLogic != nil {
		next.CollectionLogic = *in.CollectionLogic
	}
	if in.Parent != nil && in.Parent.UUID != nil {
		next.Parent = *in.Parent.UUID
		if s.feat.v5 && s.projects[next.Parent] == nil {
			writeProblem(w, problem{Status: http.StatusNotFound, Title: "Resource does not exist", Detail: "Parent project could not be found"})
			return
		}
	}
	if msg := s.checkUpdate(p, &next); msg != "" {
		writeText(w, http.StatusConflict, msg)
		return
	}
	s.commitUpdate(p, &next)
	writeJSON(w, http.StatusOK, s.render(p, false))
}

// patchProject is PATCH /api/v1/project/{uuid}. Absent fields are kept,
// except the two primitive booleans of model/Project.java: an absent
// `active` means true and an absent `isLatest` means false.
func (s *Server) patchProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, s.manage("update")...) == nil {
		return
	}
	uuid := r.PathValue("uuid")
	if !isUUID(uuid) {
		writeViolations(w, violation{Message: "Invalid UUID", Template: "Invalid UUID", Path: "patchProject.arg0", Value: &uuid})
		return
	}
	in, ok := s.decodeProject(w, r)
	if !ok {
		return
	}
	if in.Name != nil {
		if vs := notBlank("name", in.Name); vs != nil {
			writeViolations(w, vs...)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[uuid]
	if p == nil {
		writeText(w, http.StatusNotFound, "The UUID of the project could not be found.")
		return
	}
	next, modified, status, msg := s.patched(p, in)
	switch {
	case status != 0:
		writeText(w, status, msg)
		return
	case !modified:
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if msg := s.checkUpdate(p, &next); msg != "" {
		writeText(w, http.StatusConflict, msg)
		return
	}
	s.commitUpdate(p, &next)
	writeJSON(w, http.StatusOK, s.render(p, false))
}

// patched is p with the fields in holds, and whether that changed
// anything; or the status and text of a refusal (a name and version taken,
// an unknown parent). s.mu is held.
func (s *Server) patched(p *project, in projectIn) (next project, modified bool, status int, msg string) {
	next = *p
	set := func(dst *string, v *string) {
		if v != nil && *v != *dst {
			*dst, modified = *v, true
		}
	}
	set(&next.Name, in.Name)
	set(&next.Version, in.Version)
	if modified && s.byName(next.Name, next.Version) != nil {
		return next, false, http.StatusConflict, "A project with the specified name and version already exists."
	}
	set(&next.Description, in.Description)
	set(&next.Group, in.Group)
	set(&next.Classifier, in.Classifier)
	set(&next.CollectionLogic, in.CollectionLogic)
	set(&next.Purl, in.Purl)
	set(&next.CPE, in.CPE)
	set(&next.SwidTagID, in.SwidTagID)
	if in.CollectionTag != nil {
		set(&next.CollectionTag, &in.CollectionTag.Name)
	}
	// Primitive booleans: never null, so always "present".
	active := in.Active == nil || *in.Active
	latest := in.IsLatest != nil && *in.IsLatest
	if active != next.Active {
		next.Active, modified = active, true
	}
	if latest != next.IsLatest {
		next.IsLatest, modified = latest, true
	}
	if in.Parent != nil && in.Parent.UUID != nil {
		parent := s.projects[*in.Parent.UUID]
		if parent == nil {
			return next, false, http.StatusNotFound, "The UUID of the parent project could not be found."
		}
		if next.Parent != parent.UUID {
			next.Parent, modified = parent.UUID, true
		}
	}
	if in.Tags != nil {
		tags := normalizeTags(in.tagNames())
		if len(tags) > 0 || len(next.Tags) > 0 {
			next.Tags, modified = tags, true
		}
	}
	return next, modified, 0, ""
}

// checkUpdate applies ProjectQueryManager.updateProject's rules to moving p
// to next; it returns the 409 text, or "".
func (s *Server) checkUpdate(p, next *project) string {
	if next.CollectionLogic != p.CollectionLogic && next.CollectionLogic != CollectionNone && len(p.Components) > 0 {
		return "Project cannot be made a collection project while it has components or services!"
	}
	if p.Active && !next.Active && s.hasActiveChild(p.UUID) {
		return "Project cannot be set to inactive if active children are present."
	}
	if next.Parent != "" && next.Parent != p.Parent {
		if next.Parent == p.UUID {
			return "A project cannot select itself as a parent"
		}
		parent := s.projects[next.Parent]
		if parent == nil {
			return "The UUID of the parent project could not be found."
		}
		if !parent.Active {
			return "An inactive project cannot be selected as a parent"
		}
		if s.isDescendant(parent.UUID, p.UUID) {
			return "The new parent project cannot be a child of the current project."
		}
	}
	return ""
}

func (s *Server) commitUpdate(p, next *project) {
	if next.Active != p.Active {
		next.Active = p.Active
		s.setActive(next, !p.Active)
	}
	if next.IsLatest && !p.IsLatest {
		s.clearLatest(next.Name, p.UUID)
	}
	delete(s.byNameIdx, nameKey(p.Name, p.Version))
	*p = *next
	s.byNameIdx[nameKey(p.Name, p.Version)] = p
}

func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, s.manage("delete")...) == nil {
		return
	}
	uuid := r.PathValue("uuid")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects[uuid] == nil {
		writeText(w, http.StatusNotFound, "The UUID of the project could not be found.")
		return
	}
	s.deleteTree(uuid)
	w.WriteHeader(http.StatusNoContent)
}

// deleteTree deletes uuid and, recursively, its children.
func (s *Server) deleteTree(uuid string) {
	for _, p := range s.projects {
		if p.Parent == uuid {
			s.deleteTree(p.UUID)
		}
	}
	if p := s.projects[uuid]; p != nil {
		delete(s.byNameIdx, nameKey(p.Name, p.Version))
	}
	delete(s.projects, uuid)
	for _, j := range s.queues[uuid] {
		s.tokens[j.token] = false
	}
	delete(s.queues, uuid)
}

// isMediaType reports whether the request's Content-Type is mt (parameters
// ignored).
func isMediaType(r *http.Request, mt string) bool {
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), mt)
}
