package dtracktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
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
	InactiveSince        int64 // epoch ms, 0 while active
	Components           []Component
	lastBomHash          string
	seq                  int64 // creation order: 5.x lists by name, then internal id
}

// setActive sets p's active state and, as 5.x derives one from the other,
// its inactiveSince. s.mu is held.
func (s *Server) setActive(p *project, active bool) {
	if p.Active == active {
		return
	}
	p.Active = active
	p.InactiveSince = 0
	if !active {
		p.InactiveSince = time.Now().UnixMilli()
	}
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

// Children returns the projects whose parent is uuid, sorted as the API
// lists them.
func (s *Server) Children(uuid string) []Project {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Project
	for _, p := range s.sorted() {
		if p.Parent == uuid {
			out = append(out, p.snapshot())
		}
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
	if !np.Active {
		np.InactiveSince = time.Now().UnixMilli()
	}
	s.add(np)
	return np.snapshot(), nil
}

// add stores p; with IsLatest it takes the flag from other versions.
func (s *Server) add(p *project) {
	s.nextSeq++
	p.seq = s.nextSeq
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
		if s.feat.v5 {
			return out[i].seq < out[j].seq // 5.x: name, then internal id
		}
		return out[i].Version > out[j].Version // 4.x: version desc
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
	Tags                []tagJSON     `json:"tags,omitzero"`
	Active              bool          `json:"active"`
	InactiveSince       int64         `json:"inactiveSince,omitempty"`
	HasChildren         *bool         `json:"hasChildren,omitempty"`
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
	if s.feat.tags {
		latest := p.IsLatest
		out.IsLatest = &latest
	}
	if s.feat.collections {
		out.CollectionLogic = p.CollectionLogic
		if p.CollectionTag != "" {
			out.CollectionTag = &tagJSON{Name: p.CollectionTag}
		}
	}
	if s.feat.v5 {
		// No NONE: a plain project's collectionLogic is null, and a
		// collection project's classifier is.
		if p.CollectionLogic == CollectionNone {
			out.CollectionLogic = ""
		} else {
			out.Classifier = ""
		}
		out.InactiveSince = p.InactiveSince
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

// renderListed is p as 5.x lists it (ListProjectsResponseItem): tags
// omitted when empty, and hasChildren; 4.x lists the Project itself.
func (s *Server) renderListed(p *project) projectJSON {
	out := s.render(p, false)
	if s.feat.v5 {
		has := false
		for _, o := range s.projects {
			has = has || o.Parent == p.UUID
		}
		out.HasChildren = &has
		if len(out.Tags) == 0 {
			out.Tags = nil
		}
	}
	return out
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
		return s.feat.collections
	case "inactiveSince":
		return s.feat.v5
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
	if in.CollectionLogic != nil && (!slices.Contains(collectionLogics, *in.CollectionLogic) || (s.feat.v5 && *in.CollectionLogic == CollectionNone)) {
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
	if s.feat.v5 && in.Parent != nil && in.Parent.UUID == nil {
		writeText(w, http.StatusBadRequest, "parent.uuid must be provided when parent is set")
		return in, false
	}
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
