package dtracktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

// job is one accepted upload waiting for its project's worker.
type job struct {
	token   string
	content []byte
}

// enqueue queues j for project uuid and marks its token processing; the
// caller holds s.mu. Uploads of one project are processed one at a time, in
// order (the per-project lock of BomUploadProcessingTask).
func (s *Server) enqueue(uuid string, j job) {
	s.tokens[j.token] = true
	s.queues[uuid] = append(s.queues[uuid], j)
	if !s.working[uuid] {
		s.working[uuid] = true
		s.workers.Add(1)
		go s.work(uuid)
	}
}

func (s *Server) work(uuid string) {
	defer s.workers.Done()
	for {
		s.mu.Lock()
		q := s.queues[uuid]
		if len(q) == 0 {
			delete(s.working, uuid)
			delete(s.queues, uuid)
			s.mu.Unlock()
			return
		}
		j := q[0]
		s.queues[uuid] = q[1:]
		s.mu.Unlock()

		if !s.sleep(s.opts.ProcessingDelay) {
			return
		}
		parsed, perr := parseBOM(j.content, s.feat.v5)
		s.mu.Lock()
		if p := s.projects[uuid]; p != nil {
			hash := schemas.BomHash(j.content)
			if perr != nil {
				s.failed[hash]++ // BOM_PROCESSING_FAILED: nothing changes
			} else {
				s.apply(p, parsed, hash)
				s.processed[hash]++
			}
		}
		token := j.token
		if s.opts.AnalysisDelay <= 0 {
			s.tokens[token] = false
		}
		s.mu.Unlock()
		if s.opts.AnalysisDelay > 0 {
			time.AfterFunc(s.opts.AnalysisDelay, func() {
				s.mu.Lock()
				s.tokens[token] = false
				s.mu.Unlock()
			})
		}
	}
}

// sleep waits d unless the server closes; it reports whether to go on.
func (s *Server) sleep(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-s.closing:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.closing:
		return false
	case <-t.C:
		return true
	}
}

// cdxComponent and cdxBOM are the parts of a CycloneDX BOM that processing
// reads.
type cdxComponent struct {
	Type    string `json:"type"`
	Group   string `json:"group"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Purl    string `json:"purl"`
	CPE     string `json:"cpe"`
	Swid    *struct {
		TagID string `json:"tagId"`
	} `json:"swid"`
	Properties []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"properties"`
	Components []cdxComponent `json:"components"`
}

type cdxBOM struct {
	SpecVersion string `json:"specVersion"`
	Metadata    *struct {
		Component *cdxComponent `json:"component"`
	} `json:"metadata"`
	Components []cdxComponent `json:"components"`
}

// parsed is a BOM ready to apply.
type parsed struct {
	format     string
	meta       *Component // from metadata.component, for the project
	components []Component
}

// parseBOM does the part of BomUploadProcessingTask that can fail: parsing
// and converting every component. A type Dependency-Track's Classifier
// lacks (cryptographic-asset before 5.x, which added CRYPTOGRAPHIC_ASSET)
// fails the whole BOM.
func parseBOM(content []byte, v5 bool) (parsed, error) {
	var bom cdxBOM
	if err := json.Unmarshal(content, &bom); err != nil {
		return parsed{}, fmt.Errorf("Unable to parse BOM from byte array: %w", err)
	}
	out := parsed{format: "CycloneDX " + bom.SpecVersion}
	var all []cdxComponent
	var flatten func(cs []cdxComponent)
	flatten = func(cs []cdxComponent) {
		for _, c := range cs {
			all = append(all, c)
			flatten(c.Components)
		}
	}
	if bom.Metadata != nil && bom.Metadata.Component != nil {
		m, err := convert(*bom.Metadata.Component, v5)
		if err != nil {
			return parsed{}, err
		}
		out.meta = &m
		flatten(bom.Metadata.Component.Components)
	}
	flatten(bom.Components)
	seen := make(map[string]bool, len(all))
	for _, c := range all {
		cc, err := convert(c, v5)
		if err != nil {
			return parsed{}, err
		}
		if id := identity(cc); !seen[id] {
			seen[id] = true
			out.components = append(out.components, cc)
		}
	}
	return out, nil
}

// convert is ModelConverter for one component.
func convert(c cdxComponent, v5 bool) (Component, error) {
	out := Component{Group: c.Group, Name: c.Name, Version: c.Version, Purl: normalizePurl(c.Purl), CPE: c.CPE}
	if c.Swid != nil {
		out.SwidTagID = c.Swid.TagID
	}
	if c.Type == "" {
		out.Classifier = "LIBRARY"
	} else {
		out.Classifier = strings.ToUpper(strings.ReplaceAll(c.Type, "-", "_"))
		if !slices.Contains(classifiers, out.Classifier) && !(v5 && out.Classifier == "CRYPTOGRAPHIC_ASSET") {
			return Component{}, fmt.Errorf("No enum constant org.dependencytrack.model.Classifier.%s", out.Classifier)
		}
	}
	for _, p := range c.Properties {
		group, name, ok := strings.Cut(p.Name, ":")
		if !ok {
			group, name = "", p.Name
		}
		prop := Property{Group: group, Name: name, Value: p.Value}
		if !slices.Contains(out.Properties, prop) {
			out.Properties = append(out.Properties, prop)
		}
	}
	return out, nil
}

// identity is ComponentIdentity: what makes two components the same one.
func identity(c Component) string {
	return strings.Join([]string{c.Purl, c.CPE, c.SwidTagID, c.Group, c.Name, c.Version}, "\x00")
}

// apply reconciles p's components with the BOM's (s.mu held): matches keep
// their UUID, the rest of the old ones are deleted, and the project's
// metadata and lastBomImport are updated.
func (s *Server) apply(p *project, b parsed, hash string) {
	old := map[string]string{}
	for _, c := range p.Components {
		old[identity(c)] = c.UUID
	}
	next := make([]Component, 0, len(b.components))
	for _, c := range b.components {
		if id, ok := old[identity(c)]; ok {
			c.UUID = id
		} else {
			c.UUID = newUUID()
		}
		next = append(next, c)
	}
	p.Components = next
	if b.meta != nil {
		p.Classifier = b.meta.Classifier
		p.Purl, p.CPE, p.SwidTagID = b.meta.Purl, b.meta.CPE, b.meta.SwidTagID
	}
	// Epoch milliseconds, strictly increasing so that a client comparing
	// lastBomImport sees every import even within one millisecond.
	now := time.Now().UnixMilli()
	if now <= s.lastMs {
		now = s.lastMs + 1
	}
	s.lastMs = now
	p.LastBomImport = now
	p.LastBomImportFormat = b.format
	p.lastBomHash = hash
}

// normalizePurl parses a package URL the way packageurl-java 1.5.0 would
// accept it and returns its canonical form, or "" for a malformed one
// (which Dependency-Track silently drops). pypi names are lower-cased with
// '_' turned into '-'.
func normalizePurl(s string) string {
	p, err := parsePurl(s)
	if err != nil {
		return ""
	}
	return p
}

func parsePurl(s string) (string, error) {
	rest, ok := strings.CutPrefix(s, "pkg:")
	if !ok {
		return "", errors.New("no pkg: scheme")
	}
	rest = strings.TrimLeft(rest, "/")
	subpath := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, subpath = rest[:i], rest[i:]
	}
	qualifiers := ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, qualifiers = rest[:i], rest[i:]
		for kv := range strings.SplitSeq(qualifiers[1:], "&") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return "", errors.New("qualifier without a value")
			}
		}
	}
	typ, path, ok := strings.Cut(rest, "/")
	if !ok || typ == "" {
		return "", errors.New("no type")
	}
	typ = strings.ToLower(typ)
	for _, c := range typ {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '+' || c == '-') {
			return "", errors.New("bad type")
		}
	}
	version := ""
	if i := strings.LastIndexByte(path, '@'); i >= 0 {
		path, version = path[:i], path[i:]
	}
	path = strings.Trim(path, "/")
	ns, name := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		ns, name = path[:i]+"/", path[i+1:]
	}
	if name == "" {
		return "", errors.New("no name")
	}
	if typ == "pypi" {
		name = strings.ReplaceAll(strings.ToLower(name), "_", "-")
	}
	return "pkg:" + typ + "/" + ns + name + version + qualifiers + subpath, nil
}
