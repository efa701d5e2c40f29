package dtracktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Collection logics (4.13.0, model/ProjectCollectionLogic.java).
const (
	CollectionNone                           = "NONE"
	CollectionAggregateDirectChildren        = "AGGREGATE_DIRECT_CHILDREN"
	CollectionAggregateDirectChildrenWithTag = "AGGREGATE_DIRECT_CHILDREN_WITH_TAG"
	CollectionAggregateLatestVersion         = "AGGREGATE_LATEST_VERSION_CHILDREN"
)

var collectionLogics = []string{CollectionNone, CollectionAggregateDirectChildren, CollectionAggregateDirectChildrenWithTag, CollectionAggregateLatestVersion}

// classifiers are the project and component classifiers (model/Classifier.java).
var classifiers = []string{"APPLICATION", "FRAMEWORK", "LIBRARY", "CONTAINER", "OPERATING_SYSTEM", "DEVICE",
	"FIRMWARE", "FILE", "PLATFORM", "DEVICE_DRIVER", "MACHINE_LEARNING_MODEL", "DATA"}

// project is the stored state of one project.
type project struct {
	UUID, Name, Version  string // Version "" is null
	Classifier           string
	Description, Group   string
	Purl, CPE, SwidTagID string
	Tags                 []string // lower case, sorted
	Active, IsLatest     bool
	Parent               string // uuid, or ""
	CollectionLogic      string
	CollectionTag        string
	LastBomImport        int64
	LastBomImportFormat  string
	Components           []Component
	lastBomHash          string
}

// Project is a snapshot of a stored project, for tests.
type Project struct {
	UUID, Name, Version string
	Classifier          string
	Tags                []string
	Active, IsLatest    bool
	// Parent is the parent's UUID, or "".
	Parent          string
	CollectionLogic string
	// LastBomImport is epoch milliseconds, 0 when no BOM was imported.
	LastBomImport       int64
	LastBomImportFormat string
	// BomHash is "sha256:<hex>" of the last BOM imported (the double's
	// bookkeeping; the real server keeps no such thing).
	BomHash    string
	Components []Component
	Purl, CPE  string
}

// Component is a stored component, for tests.
type Component struct {
	UUID       string
	Classifier string // APPLICATION, CONTAINER, MACHINE_LEARNING_MODEL, LIBRARY (no type), ...
	Group      string
	Name       string
	Version    string
	Purl       string // "" when the BOM's purl was malformed
	CPE        string
	SwidTagID  string
	Properties []Property
}

// Property is a component property: the BOM's name split at its first ':'.
type Property struct {
	Group, Name, Value string
}

func (p *project) snapshot() Project {
	out := Project{
		UUID: p.UUID, Name: p.Name, Version: p.Version, Classifier: p.Classifier,
		Tags: slices.Clone(p.Tags), Active: p.Active, IsLatest: p.IsLatest, Parent: p.Parent,
		CollectionLogic: p.CollectionLogic, LastBomImport: p.LastBomImport,
		LastBomImportFormat: p.LastBomImportFormat, BomHash: p.lastBomHash, Purl: p.Purl, CPE: p.CPE,
	}
	for _, c := range p.Components {
		c.Properties = slices.Clone(c.Properties)
		out.Components = append(out.Components, c)
	}
	return out
}

// Project returns the project called name in version (version "" is null).
func (s *Server) Project(name, version string) (Project, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byName(name, version)
	if p == nil {
		return Project{}, false
	}
	return p.snapshot(), true
}

// ProjectByUUID returns the project with uuid.
func (s *Server) ProjectByUUID(uuid string) (Project, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[uuid]
	if p == nil {
		return Project{}, false
	}
	return p.snapshot(), true
}

// Projects returns every project, sorted by name and version.
func (s *Server) Projects() []Project {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Project, 0, len(s.projects))
	for _, p := range s.sorted() {
		out = append(out, p.snapshot())
	}
	return out
}

// CreateProject stores a project directly (as an administrator would): p.UUID
// is generated when empty, an empty Classifier is APPLICATION and an empty
// CollectionLogic NONE. Components and BomHash are ignored.
func (s *Server) CreateProject(p Project) (Project, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName(p.Name, p.Version) != nil {
		return Project{}, fmt.Errorf("project %s %s exists", p.Name, p.Version)
	}
	if p.Parent != "" && s.projects[p.Parent] == nil {
		return Project{}, fmt.Errorf("parent %s not found", p.Parent)
	}
	np := &project{
		UUID: p.UUID, Name: p.Name, Version: p.Version, Classifier: p.Classifier, Tags: normalizeTags(p.Tags),
		Active: p.Active, IsLatest: p.IsLatest, Parent: p.Parent, CollectionLogic: p.CollectionLogic,
		LastBomImport: p.LastBomImport, LastBomImportFormat: p.LastBomImportFormat, Purl: p.Purl, CPE: p.CPE,
	}
	if np.UUID == "" {
		np.UUID = newUUID()
	}
	if np.Classifier == "" {
		np.Classifier = "APPLICATION"
	}
	if np.CollectionLogic == "" {
		np.CollectionLogic = CollectionNone
	}
	s.add(np)
	return np.snapshot(), nil
}

// add stores p; with IsLatest it takes the flag from other versions.
func (s *Server) add(p *project) {
	if p.IsLatest {
		s.clearLatest(p.Name, p.UUID)
	}
	s.projects[p.UUID] = p
	s.byNameIdx[nameKey(p.Name, p.Version)] = p
}

func nameKey(name, version string) string { return name + "\x00" + version }

func (s *Server) clearLatest(name, except string) {
	for _, o := range s.projects {
		if o.Name == name && o.UUID != except {
			o.IsLatest = false
		}
	}
}

func (s *Server) byName(name, version string) *project {
	return s.byNameIdx[nameKey(name, version)]
}

func (s *Server) sorted() []*project {
	out := make([]*project, 0, len(s.projects))
	for _, p := range s.projects {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Version > out[j].Version // version desc, as the API lists them
	})
	return out
}

func (s *Server) hasActiveChild(uuid string) bool {
	for _, p := range s.projects {
		if p.Parent == uuid && p.Active {
			return true
		}
	}
	return false
}

func (s *Server) isDescendant(uuid, of string) bool {
	for p := s.projects[uuid]; p != nil && p.Parent != ""; p = s.projects[p.Parent] {
		if p.Parent == of {
			return true
		}
	}
	return false
}

// normalizeTags trims, lower-cases, drops blanks and duplicates, and sorts,
// as TagQueryManager.resolveTags does.
func normalizeTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// JSON shapes.

type tagJSON struct {
	Name string `json:"name"`
}

type refJSON struct {
	UUID    string `json:"uuid"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

type versionJSON struct {
	UUID    string `json:"uuid"`
	Version string `json:"version,omitempty"`
	Active  bool   `json:"active"`
}

type projectJSON struct {
	UUID                string        `json:"uuid"`
	Name                string        `json:"name"`
	Version             string        `json:"version,omitempty"`
	Description         string        `json:"description,omitempty"`
	Group               string        `json:"group,omitempty"`
	Classifier          string        `json:"classifier,omitempty"`
	CollectionLogic     string        `json:"collectionLogic,omitempty"`
	CollectionTag       *tagJSON      `json:"collectionTag,omitempty"`
	Purl                string        `json:"purl,omitempty"`
	CPE                 string        `json:"cpe,omitempty"`
	SwidTagID           string        `json:"swidTagId,omitempty"`
	Tags                []tagJSON     `json:"tags"`
	Active              bool          `json:"active"`
	IsLatest            *bool         `json:"isLatest,omitempty"`
	Parent              *refJSON      `json:"parent,omitempty"`
	LastBomImport       int64         `json:"lastBomImport,omitempty"`
	LastBomImportFormat string        `json:"lastBomImportFormat,omitempty"`
	Versions            []versionJSON `json:"versions,omitempty"`
}

// render is p as the API serialises it; versions are listed for lookups.
func (s *Server) render(p *project, withVersions bool) projectJSON {
	out := projectJSON{
		UUID: p.UUID, Name: p.Name, Version: p.Version, Description: p.Description, Group: p.Group,
		Classifier: p.Classifier, Purl: p.Purl, CPE: p.CPE, SwidTagID: p.SwidTagID,
		Tags: []tagJSON{}, Active: p.Active,
		LastBomImport: p.LastBomImport, LastBomImportFormat: p.LastBomImportFormat,
	}
	if s.version.atLeast(4, 12, 0) {
		latest := p.IsLatest
		out.IsLatest = &latest
	}
	if s.version.atLeast(4, 13, 0) {
		out.CollectionLogic = p.CollectionLogic
		if p.CollectionTag != "" {
			out.CollectionTag = &tagJSON{Name: p.CollectionTag}
		}
	}
	for _, t := range p.Tags {
		out.Tags = append(out.Tags, tagJSON{Name: t})
	}
	if parent := s.projects[p.Parent]; parent != nil {
		out.Parent = &refJSON{UUID: parent.UUID, Name: parent.Name, Version: parent.Version}
	}
	if withVersions {
		for _, o := range s.projects {
			if o.Name == p.Name {
				out.Versions = append(out.Versions, versionJSON{UUID: o.UUID, Version: o.Version, Active: o.Active})
			}
		}
		sort.Slice(out.Versions, func(i, j int) bool { return out.Versions[i].Version > out.Versions[j].Version })
	}
	return out
}

// projectIn is a Project request body; nil fields were absent or null.
type projectIn struct {
	UUID            *string   `json:"uuid"`
	Name            *string   `json:"name"`
	Version         *string   `json:"version"`
	Description     *string   `json:"description"`
	Group           *string   `json:"group"`
	Classifier      *string   `json:"classifier"`
	CollectionLogic *string   `json:"collectionLogic"`
	CollectionTag   *tagJSON  `json:"collectionTag"`
	Purl            *string   `json:"purl"`
	CPE             *string   `json:"cpe"`
	SwidTagID       *string   `json:"swidTagId"`
	Tags            []tagJSON `json:"tags"`
	Active          *bool     `json:"active"`
	IsLatest        *bool     `json:"isLatest"`
	Parent          *refIn    `json:"parent"`
}

type refIn struct {
	UUID *string `json:"uuid"`
}

// projectFields are the JSON properties of model/Project.java (4.13); a body
// naming another gets a mapping 400, as Project does not ignore unknown ones.
var projectFields = []string{"authors", "author", "publisher", "manufacturer", "supplier", "group", "name",
	"description", "version", "classifier", "collectionLogic", "collectionTag", "cpe", "purl", "swidTagId",
	"directDependencies", "uuid", "parent", "children", "properties", "tags", "lastBomImport",
	"lastBomImportFormat", "lastInheritedRiskScore", "lastVulnerabilityAnalysis", "active", "isLatest",
	"accessTeams", "externalReferences", "metadata", "bomRef", "metrics", "versions", "dependencyGraph"}

// knownProjectField reports whether this server version maps field.
func (s *Server) knownProjectField(field string) bool {
	switch field {
	case "isLatest":
		return s.version.atLeast(4, 12, 0)
	case "collectionLogic", "collectionTag":
		return s.version.atLeast(4, 13, 0)
	}
	return slices.Contains(projectFields, field)
}

// decodeProject maps a Project body, writing the mapping or validation 400
// itself; ok is false when it did.
func (s *Server) decodeProject(w http.ResponseWriter, r *http.Request) (in projectIn, ok bool) {
	if !isMediaType(r, "application/json") {
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return in, false
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&raw); err != nil {
		writeMappingProblem(w, err.Error())
		return in, false
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !s.knownProjectField(k) {
			writeMappingProblem(w, fmt.Sprintf(`Unrecognized field %q (class org.dependencytrack.model.Project), not marked as ignorable`, k))
			return in, false
		}
	}
	b, _ := json.Marshal(raw)
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&in); err != nil {
		writeMappingProblem(w, err.Error())
		return in, false
	}
	if in.Classifier != nil && !slices.Contains(classifiers, *in.Classifier) {
		writeMappingProblem(w, fmt.Sprintf("Cannot deserialize value of type `org.dependencytrack.model.Classifier` from String %q: not one of the values accepted for Enum class", *in.Classifier))
		return in, false
	}
	if in.CollectionLogic != nil && !slices.Contains(collectionLogics, *in.CollectionLogic) {
		writeMappingProblem(w, fmt.Sprintf("Cannot deserialize value of type `org.dependencytrack.model.ProjectCollectionLogic` from String %q: not one of the values accepted for Enum class", *in.CollectionLogic))
		return in, false
	}
	trim := func(p **string) {
		if *p != nil {
			v := strings.TrimSpace(**p)
			*p = &v
		}
	}
	trim(&in.Name)
	trim(&in.Version)
	trim(&in.Description)
	trim(&in.Group)
	return in, true
}

func (in projectIn) tagNames() []string {
	var out []string
	for _, t := range in.Tags {
		out = append(out, t.Name)
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

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
		all = append(all, s.render(p, false))
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

// paginate returns [from, to) for Alpine's paging parameters: offset, or
// pageNumber (from 1), and pageSize (default 100).
func paginate(q map[string][]string, total int) [2]int {
	get := func(k string) int {
		if v, ok := q[k]; ok && len(v) > 0 {
			n, err := strconv.Atoi(v[0])
			if err == nil && n >= 0 {
				return n
			}
		}
		return -1
	}
	size := get("pageSize")
	if size <= 0 {
		size = 100
	}
	from := 0
	if off := get("offset"); off >= 0 {
		from = off
	} else if n := get("pageNumber"); n > 0 {
		from = (n - 1) * size
	}
	return [2]int{from, from + size}
}

func (s *Server) lookupProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, ViewPortfolio) == nil {
		return
	}
	q := r.URL.Query()
	s.writeProject(w, func() *project { return s.byName(q.Get("name"), q.Get("version")) })
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
				out = append(out, s.render(c, false))
			}
		}
	}
	s.mu.Unlock()
	if p == nil {
		writeText(w, http.StatusNotFound, "The UUID of the project could not be found.")
		return
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(out)))
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, PortfolioManagement) == nil {
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
	if in.Active != nil {
		p.Active = *in.Active
	}
	if in.IsLatest != nil {
		p.IsLatest = *in.IsLatest
	}
	if in.Parent != nil && in.Parent.UUID != nil {
		// An unknown parent is silently dropped.
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
	if s.authorize(w, r, PortfolioManagement) == nil {
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
	if s.authorize(w, r, PortfolioManagement) == nil {
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
	next := *p
	modified := false
	set := func(dst *string, v *string) {
		if v != nil && *v != *dst {
			*dst, modified = *v, true
		}
	}
	set(&next.Name, in.Name)
	set(&next.Version, in.Version)
	if modified && s.byName(next.Name, next.Version) != nil {
		writeText(w, http.StatusConflict, "A project with the specified name and version already exists.")
		return
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
			writeText(w, http.StatusNotFound, "The UUID of the parent project could not be found.")
			return
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
	if !modified {
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
	if next.IsLatest && !p.IsLatest {
		s.clearLatest(next.Name, p.UUID)
	}
	delete(s.byNameIdx, nameKey(p.Name, p.Version))
	*p = *next
	s.byNameIdx[nameKey(p.Name, p.Version)] = p
}

func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, PortfolioManagement) == nil {
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
