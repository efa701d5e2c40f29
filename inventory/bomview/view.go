package bomview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sections of a View, in the order Diff sorts Added and Removed by.
const (
	SectionRuntime  = "runtime"  // bom-ref "runtime:..."
	SectionModel    = "model"    // type machine-learning-model
	SectionImage    = "image"    // type container
	SectionOther    = "other"    // any other component
	SectionWorkload = "workload" // metadata.component
)

// Property names the view reads into fields of its own.
const (
	propRole          = "bomstream:role"
	propConfidence    = "bomstream:confidence"
	propImageDigest   = "bomstream:image:digest"
	propModelRevision = "bomstream:model:revision"
	propModelDigest   = "bomstream:model:digest"
	unresolvedDigest  = "unresolved"
	runtimeRefPrefix  = "runtime:"
	typeModel         = "machine-learning-model"
	typeContainer     = "container"
)

// View is one BOM as a reader sees it.
type View struct {
	SpecVersion, SerialNumber string
	Timestamp                 string      // metadata.timestamp as written
	Workload                  Component   // metadata.component (its Properties hold bomstream:cluster, namespace, kind, uid, inputHash...)
	Runtimes                  []Component // components whose bom-ref starts with "runtime:"
	Models                    []Component // type machine-learning-model
	Images                    []Component // type container
	Others                    []Component // any other component, in BOM order
	// Dependencies maps a ref to its dependsOn, as written; never nil
	// after Read. A ref listed with no dependsOn maps to nil.
	Dependencies map[string][]string
}

// Component is one component of a BOM, or its metadata.component.
type Component struct {
	Ref, Type, Group, Name, Version, Purl string
	// Section is where the view lists the component: SectionRuntime,
	// SectionModel, SectionImage, SectionOther or SectionWorkload.
	Section    string
	Hashes     []Hash     // alg + content
	Properties []Property // all properties in BOM order (name, value)
	Roles      []string   // values of bomstream:role properties (sorted, unique)
	Confidence string     // bomstream:confidence
	Digests    []string   // bomstream:image:digest values other than "unresolved"
	Revisions  []string   // bomstream:model:revision and bomstream:model:digest values
	Evidence   []Evidence // evidence.identity entries, one per method
	Locations  []string   // evidence.occurrences[].location
}

// Hash is one entry of a component's hashes.
type Hash struct{ Alg, Content string }

// Property is one name-value property.
type Property struct{ Name, Value string }

// Evidence is one method of one evidence.identity entry. An identity
// entry with no methods is one Evidence with no Technique and the
// entry's own confidence.
type Evidence struct {
	Field      string // identity field: name, version, purl...
	Technique  string
	Confidence float64
	Value      string
	Concluded  string // concludedValue when present
}

// Property returns the values of the properties named name, in BOM
// order; nil when there is none.
func (c Component) Property(name string) []string {
	var out []string
	for _, p := range c.Properties {
		if p.Name == name {
			out = append(out, p.Value)
		}
	}
	return out
}

// The JSON shapes Read decodes. Each level is decoded on its own, so that
// an error can say where in the BOM it is.
type (
	bomJSON struct {
		BOMFormat    json.RawMessage `json:"bomFormat"`
		SpecVersion  json.RawMessage `json:"specVersion"`
		SerialNumber json.RawMessage `json:"serialNumber"`
		Metadata     json.RawMessage `json:"metadata"`
		Components   json.RawMessage `json:"components"`
		Dependencies json.RawMessage `json:"dependencies"`
	}
	metadataJSON struct {
		Timestamp string          `json:"timestamp"`
		Component json.RawMessage `json:"component"`
	}
	componentJSON struct {
		BOMRef     string     `json:"bom-ref"`
		Type       string     `json:"type"`
		Group      string     `json:"group"`
		Name       string     `json:"name"`
		Version    string     `json:"version"`
		Purl       string     `json:"purl"`
		Hashes     []hashJSON `json:"hashes"`
		Properties []Property `json:"properties"`
		Evidence   *struct {
			Identity    json.RawMessage `json:"identity"`
			Occurrences []struct {
				Location string `json:"location"`
			} `json:"occurrences"`
		} `json:"evidence"`
	}
	hashJSON struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	}
	identityJSON struct {
		Field          string   `json:"field"`
		Confidence     *float64 `json:"confidence"`
		ConcludedValue string   `json:"concludedValue"`
		Methods        []struct {
			Technique  string  `json:"technique"`
			Confidence float64 `json:"confidence"`
			Value      string  `json:"value"`
		} `json:"methods"`
	}
	dependencyJSON struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	}
)

// ErrNotCycloneDX is wrapped by Read's error for a JSON body that is no
// CycloneDX BOM (its bomFormat is not "CycloneDX").
var ErrNotCycloneDX = errors.New("not a CycloneDX BOM")

// Read parses a CycloneDX JSON body (1.6 or 1.7). An error names what is
// wrong ("bom: components[3]: ...") and wraps the JSON error.
func Read(body []byte) (View, error) {
	var raw bomJSON
	if err := json.Unmarshal(body, &raw); err != nil {
		return View{}, fmt.Errorf("bom: %w", err)
	}
	var format string
	if err := decode(raw.BOMFormat, &format, "bomFormat"); err != nil {
		return View{}, err
	}
	if format != "CycloneDX" {
		return View{}, fmt.Errorf("bom: bomFormat %q: %w", format, ErrNotCycloneDX)
	}
	v := View{Dependencies: map[string][]string{}}
	if err := decode(raw.SpecVersion, &v.SpecVersion, "specVersion"); err != nil {
		return View{}, err
	}
	if v.SpecVersion != "1.6" && v.SpecVersion != "1.7" {
		return View{}, fmt.Errorf("bom: specVersion %q: want 1.6 or 1.7", v.SpecVersion)
	}
	if err := decode(raw.SerialNumber, &v.SerialNumber, "serialNumber"); err != nil {
		return View{}, err
	}
	if err := v.readMetadata(raw.Metadata); err != nil {
		return View{}, err
	}
	if err := v.readComponents(raw.Components); err != nil {
		return View{}, err
	}
	if err := v.readDependencies(raw.Dependencies); err != nil {
		return View{}, err
	}
	return v, nil
}

// decode decodes raw, when present, into dst; an error names path.
func decode(raw json.RawMessage, dst any, path string) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("bom: %s: %w", path, err)
	}
	return nil
}

// readMetadata reads the timestamp and the workload.
func (v *View) readMetadata(raw json.RawMessage) error {
	var md metadataJSON
	if err := decode(raw, &md, "metadata"); err != nil {
		return err
	}
	v.Timestamp = md.Timestamp
	if isAbsent(md.Component) {
		return nil
	}
	c, err := readComponent(md.Component, "metadata.component")
	if err != nil {
		return err
	}
	c.Section = SectionWorkload
	v.Workload = c
	return nil
}

// readComponents reads the components into their sections, each in BOM
// order. Every component must have a bom-ref of its own.
func (v *View) readComponents(raw json.RawMessage) error {
	var raws []json.RawMessage
	if err := decode(raw, &raws, "components"); err != nil {
		return err
	}
	seen := make(map[string]int, len(raws))
	for i, r := range raws {
		path := fmt.Sprintf("components[%d]", i)
		c, err := readComponent(r, path)
		if err != nil {
			return err
		}
		if c.Ref == "" {
			return fmt.Errorf("bom: %s: no bom-ref", path)
		}
		if j, dup := seen[c.Ref]; dup {
			return fmt.Errorf("bom: %s: bom-ref %q is also components[%d]'s", path, c.Ref, j)
		}
		seen[c.Ref] = i
		c.Section = sectionOf(c)
		switch c.Section {
		case SectionRuntime:
			v.Runtimes = append(v.Runtimes, c)
		case SectionModel:
			v.Models = append(v.Models, c)
		case SectionImage:
			v.Images = append(v.Images, c)
		default:
			v.Others = append(v.Others, c)
		}
	}
	return nil
}

// sectionOf is the section of a component: a runtime by its bom-ref,
// then by type.
func sectionOf(c Component) string {
	switch {
	case strings.HasPrefix(c.Ref, runtimeRefPrefix):
		return SectionRuntime
	case c.Type == typeModel:
		return SectionModel
	case c.Type == typeContainer:
		return SectionImage
	}
	return SectionOther
}

// readDependencies reads the dependencies; the dependsOn of a ref listed
// twice are appended.
func (v *View) readDependencies(raw json.RawMessage) error {
	var deps []json.RawMessage
	if err := decode(raw, &deps, "dependencies"); err != nil {
		return err
	}
	for i, r := range deps {
		path := fmt.Sprintf("dependencies[%d]", i)
		var d dependencyJSON
		if err := decode(r, &d, path); err != nil {
			return err
		}
		if d.Ref == "" {
			return fmt.Errorf("bom: %s: no ref", path)
		}
		v.Dependencies[d.Ref] = append(v.Dependencies[d.Ref], d.DependsOn...)
	}
	return nil
}

// readComponent reads the component at path.
func readComponent(raw json.RawMessage, path string) (Component, error) {
	var cj componentJSON
	if err := decode(raw, &cj, path); err != nil {
		return Component{}, err
	}
	c := Component{
		Ref: cj.BOMRef, Type: cj.Type, Group: cj.Group, Name: cj.Name,
		Version: cj.Version, Purl: cj.Purl, Properties: cj.Properties,
	}
	for _, h := range cj.Hashes {
		c.Hashes = append(c.Hashes, Hash{Alg: h.Alg, Content: h.Content})
	}
	for _, p := range c.Properties {
		switch p.Name {
		case propRole:
			c.Roles = append(c.Roles, p.Value)
		case propConfidence:
			if c.Confidence == "" {
				c.Confidence = p.Value
			}
		case propImageDigest:
			if p.Value != unresolvedDigest {
				c.Digests = append(c.Digests, p.Value)
			}
		case propModelRevision, propModelDigest:
			c.Revisions = append(c.Revisions, p.Value)
		}
	}
	slices.Sort(c.Roles)
	c.Roles = slices.Compact(c.Roles)
	if cj.Evidence != nil {
		ev, err := readIdentity(cj.Evidence.Identity)
		if err != nil {
			return Component{}, fmt.Errorf("bom: %s: evidence.identity: %w", path, err)
		}
		c.Evidence = ev
		for _, o := range cj.Evidence.Occurrences {
			c.Locations = append(c.Locations, o.Location)
		}
	}
	return c, nil
}

// readIdentity reads evidence.identity: an array (1.6, 1.7) or a single
// object (as 1.5 wrote it), one Evidence per method.
func readIdentity(raw json.RawMessage) ([]Evidence, error) {
	if isAbsent(raw) {
		return nil, nil
	}
	var ids []identityJSON
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		ids = make([]identityJSON, 1)
		if err := json.Unmarshal(raw, &ids[0]); err != nil {
			return nil, err
		}
	} else if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, err
	}
	var out []Evidence
	for _, id := range ids {
		if len(id.Methods) == 0 {
			e := Evidence{Field: id.Field, Concluded: id.ConcludedValue}
			if id.Confidence != nil {
				e.Confidence = *id.Confidence
			}
			out = append(out, e)
			continue
		}
		for _, m := range id.Methods {
			out = append(out, Evidence{
				Field: id.Field, Technique: m.Technique, Confidence: m.Confidence,
				Value: m.Value, Concluded: id.ConcludedValue,
			})
		}
	}
	return out, nil
}

// isAbsent says whether raw is a missing or null JSON value.
func isAbsent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}
