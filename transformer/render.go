package transformer

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/schemas"
)

// Config configures a Renderer. The zero value is usable: the built-in rules
// and an empty tool version.
type Config struct {
	// Version is the transformer's version; it goes into metadata.tools and
	// into the serial number, so a new transformer gives new BOM identities.
	Version string
	// RulesFile is an optional YAML file of rules merged over the built-in ones.
	RulesFile string
}

// Validate checks the fields of c.
func (c Config) Validate() error {
	if strings.ContainsAny(c.Version, "\n\r\t") {
		return fmt.Errorf("transformer config: Version %q has control characters", c.Version)
	}
	if c.RulesFile != "" {
		if _, err := os.Stat(c.RulesFile); err != nil {
			return fmt.Errorf("transformer config: RulesFile: %w", err)
		}
	}
	return nil
}

// Renderer turns WorkloadChange events into CycloneDX 1.6 BOMs. Its rules are
// compiled once; it holds no mutable state and is safe for concurrent use.
type Renderer struct {
	cfg   Config
	rules *rules
}

// NewRenderer validates cfg and compiles the rules.
func NewRenderer(cfg Config) (*Renderer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rs, err := loadRules(cfg.RulesFile)
	if err != nil {
		return nil, fmt.Errorf("new renderer: %w", err)
	}
	r, err := compileRules(rs)
	if err != nil {
		return nil, fmt.Errorf("new renderer: rules: %w", err)
	}
	return &Renderer{cfg: cfg, rules: r}, nil
}

// Skip reasons.
const (
	SkipTombstone = "tombstone: the workload is gone"
	SkipNothing   = "no serving runtime and no model"
	SkipTemplate  = "runtime template, not a workload"
)

const (
	toolName     = "bomstream"
	schemaURL16  = "http://cyclonedx.org/schema/bom-1.6.schema.json"
	propPrefix   = "bomstream:"
	workloadRef  = "workload"
	technique    = cdx.EvidenceIdentityTechniqueManifestAnalysis
	unknownImage = "unknown"
)

// Render renders the BOM of one event. It is a pure function of the event and
// the Renderer's configuration: the same event gives the same bytes.
func (r *Renderer) Render(ev schemas.WorkloadChange) (Result, error) {
	res := Result{Workload: ev.Data.Workload}
	if ev.IsTombstone() {
		res.Skipped = SkipTombstone
		return res, nil
	}
	in := ev.Data.Inputs
	if in == nil {
		return res, fmt.Errorf("render %s: %w", ev.Data.Workload, errNoInputs)
	}
	if in.Workload.Kind != "" {
		res.Workload = in.Workload
	}
	if r.rules.kindPurpose[res.Workload.Kind] == "template" {
		res.Skipped = SkipTemplate
		return res, nil
	}
	d := r.rules.detect(in)
	if len(d.runtimes) == 0 && len(d.models) == 0 {
		res.Skipped = SkipNothing
		return res, nil
	}
	inputHash := ev.Data.InputHash
	if inputHash == "" {
		h, err := schemas.InputHash(in)
		if err != nil {
			return res, fmt.Errorf("render %s: %w", res.Workload, err)
		}
		inputHash = h
	}
	bom := r.build(res.Workload, in, ev, inputHash, d)
	var buf bytes.Buffer
	buf.Grow(8 << 10)
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(false).SetEscapeHTML(false)
	if err := enc.Encode(bom); err != nil {
		return res, fmt.Errorf("render %s: encode: %w", res.Workload, err)
	}
	res.BOM = buf.Bytes()
	res.BomHash = schemas.BomHash(res.BOM)
	res.Summary = summarize(d)
	return res, nil
}

var errNoInputs = errors.New("observed event without inputs")

// serialNumber is urn:uuid:<v5-shaped uuid> of sha1(namespace, inputHash + version).
func serialNumber(inputHash, version string) string {
	// The URL namespace of RFC 4122, appendix C.
	ns := [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte("bomstream:" + inputHash + ":" + version))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return "urn:uuid:" + string(b[:])
}

func prop(name, value string) cdx.Property {
	return cdx.Property{Name: propPrefix + name, Value: value}
}

// sortProps orders properties by name then value, and drops exact duplicates.
func sortProps(ps []cdx.Property) *[]cdx.Property {
	if len(ps) == 0 {
		return nil
	}
	slices.SortFunc(ps, func(a, b cdx.Property) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	out := ps[:1]
	for _, p := range ps[1:] {
		if p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return &out
}

func (r *Renderer) build(w schemas.Workload, in *schemas.Inputs, ev schemas.WorkloadChange, inputHash string, d *detection) *cdx.BOM {
	wlProps := []cdx.Property{
		prop("cluster", w.Cluster),
		prop("namespace", w.Namespace),
		prop("kind", w.Kind),
		prop("apiVersion", w.APIVersion),
		prop("uid", w.UID),
		prop("inputHash", inputHash),
	}
	if in.Source != "" {
		wlProps = append(wlProps, prop("source", in.Source))
	}
	if d.purpose != "" {
		wlProps = append(wlProps, prop("purpose", d.purpose))
	}
	for name, engine := range d.simulators {
		wlProps = append(wlProps, prop("simulator", name))
		if engine != "" {
			wlProps = append(wlProps, prop("simulator:simulates", engine))
		}
	}
	for _, loc := range d.noImage {
		wlProps = append(wlProps, prop("image:unknown", loc))
	}
	for _, role := range d.roles {
		wlProps = append(wlProps, prop("role", role))
	}
	tool := cdx.Component{Type: cdx.ComponentTypeApplication, Name: toolName, Version: r.cfg.Version, BOMRef: "tool:" + toolName}
	meta := &cdx.Metadata{
		Timestamp: ev.Time.UTC().Format(time.RFC3339),
		Tools:     &cdx.ToolsChoice{Components: &[]cdx.Component{tool}},
		Component: &cdx.Component{
			BOMRef:     workloadRef,
			Type:       cdx.ComponentTypeApplication,
			Name:       w.Name,
			Group:      w.Namespace,
			Properties: sortProps(wlProps),
		},
	}

	var comps []cdx.Component
	var deps []cdx.Dependency
	var wlDeps []string

	runtimeNames := make([]string, 0, len(d.runtimes))
	for n := range d.runtimes {
		runtimeNames = append(runtimeNames, n)
	}
	sort.Strings(runtimeNames)
	modelRef := func(key string) string { return "model:" + key }
	for _, n := range runtimeNames {
		h := d.runtimes[n]
		c, ref := runtimeComponent(h)
		comps = append(comps, c)
		wlDeps = append(wlDeps, ref)
		var dependsOn []string
		// A wrapper depends on the engines it runs; engines on their models.
		for _, en := range runtimeNames {
			if _, ok := d.runtimes[en].wrappedBy[n]; ok {
				_, eref := runtimeComponentRef(d.runtimes[en])
				dependsOn = append(dependsOn, eref)
			}
		}
		for _, m := range h.models.sorted() {
			dependsOn = append(dependsOn, modelRef(m))
		}
		deps = append(deps, cdx.Dependency{Ref: ref, Dependencies: uniqSorted(dependsOn)})
	}

	modelKeys := make([]string, 0, len(d.models))
	for k := range d.models {
		modelKeys = append(modelKeys, k)
	}
	sort.Strings(modelKeys)
	for _, k := range modelKeys {
		comps = append(comps, modelComponent(d.models[k], modelRef(k)))
		deps = append(deps, cdx.Dependency{Ref: modelRef(k)})
	}
	for _, k := range d.workloadM.sorted() {
		wlDeps = append(wlDeps, modelRef(k))
	}

	imageKeys := make([]string, 0, len(d.containers))
	for k := range d.containers {
		imageKeys = append(imageKeys, k)
	}
	sort.Strings(imageKeys)
	for _, k := range imageKeys {
		c := containerComponent(d.containers[k])
		comps = append(comps, c)
		wlDeps = append(wlDeps, c.BOMRef)
		deps = append(deps, cdx.Dependency{Ref: c.BOMRef})
	}
	deps = append([]cdx.Dependency{{Ref: workloadRef, Dependencies: uniqSorted(wlDeps)}}, deps...)
	sort.SliceStable(deps[1:], func(i, j int) bool { return deps[1+i].Ref < deps[1+j].Ref })

	bom := &cdx.BOM{
		JSONSchema:   schemaURL16,
		BOMFormat:    cdx.BOMFormat,
		SpecVersion:  cdx.SpecVersion1_6,
		SerialNumber: serialNumber(inputHash, r.cfg.Version),
		Version:      1,
		Metadata:     meta,
		Dependencies: &deps,
	}
	if len(comps) > 0 {
		bom.Components = &comps
	}
	return bom
}

func uniqSorted(xs []string) *[]string {
	if len(xs) == 0 {
		return nil
	}
	sort.Strings(xs)
	out := xs[:1]
	for _, x := range xs[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return &out
}

func runtimeComponentRef(h *runtimeHit) (versionClaim, string) {
	v, _ := h.bestVersion()
	ref := "runtime:" + h.rule.Name
	if v.version != "" {
		ref += "@" + v.version
	}
	return v, ref
}

func runtimeComponent(h *runtimeHit) (cdx.Component, string) {
	v, ref := runtimeComponentRef(h)
	_, others := h.bestVersion()
	props := []cdx.Property{
		prop("confidence", h.conf),
		prop("runtime:confidence", h.conf),
		prop("runtime:name", h.rule.Name),
	}
	for b, c := range h.backends {
		if c == confDeclared {
			props = append(props, prop("runtime:backend", b))
		} else {
			props = append(props, prop("runtime:backend", b), prop("runtime:backend:inferred", b))
		}
	}
	for w := range h.wrappedBy {
		props = append(props, prop("runtime:wrappedBy", w))
	}
	for _, o := range others {
		props = append(props, prop("runtime:otherVersion", o))
	}
	for _, role := range h.roles {
		props = append(props, prop("role", role))
	}
	for name, vals := range h.settings {
		for val := range vals {
			props = append(props, prop("runtime:"+name, val))
		}
	}
	name := h.rule.Title
	if name == "" {
		name = h.rule.Name
	}
	c := cdx.Component{
		BOMRef:     ref,
		Type:       cdx.ComponentTypeApplication,
		Name:       name,
		Version:    v.version,
		Properties: sortProps(props),
		Evidence:   evidence(h.proofs, h.conf, v),
	}
	if h.rule.PURL != "" {
		c.PackageURL = h.rule.PURL
		if v.version != "" {
			c.PackageURL += "@" + v.version
		}
	}
	return c, ref
}

func modelComponent(m *modelHit, ref string) cdx.Component {
	props := []cdx.Property{
		prop("confidence", m.conf),
		prop("model:location-kind", m.kind),
	}
	revs := m.revisions.sorted()
	if len(revs) == 0 {
		props = append(props, prop("model:unpinned", "true"))
	}
	for _, rev := range revs {
		props = append(props, prop("model:revision", rev))
	}
	for _, role := range m.roles {
		props = append(props, prop("role", role))
	}
	for k, v := range m.props {
		props = append(props, cdx.Property{Name: k, Value: v})
	}
	c := cdx.Component{
		BOMRef:     ref,
		Type:       cdx.ComponentTypeMachineLearningModel,
		Name:       m.name,
		Properties: sortProps(props),
		Evidence:   evidence(m.proofs, m.conf, versionClaim{}),
	}
	if m.hf {
		c.PackageURL = "pkg:huggingface/" + purlPath(m.name)
		if len(revs) > 0 {
			c.Version = revs[0]
			c.PackageURL += "@" + purlEscape(strings.ToLower(revs[0]), false)
		}
	}
	return c
}

func purlPath(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = purlEscape(p, false)
	}
	return strings.Join(parts, "/")
}

func containerComponent(ch *containerHit) cdx.Component {
	conf := confDeclared
	props := []cdx.Property{}
	digests := ch.digests.sorted()
	for _, role := range ch.roles {
		props = append(props, prop("role", role))
	}
	for n := range ch.containers {
		props = append(props, prop("container:name", n))
	}
	if ch.simulator != "" {
		props = append(props, prop("simulator", ch.simulator))
	}
	c := cdx.Component{Type: cdx.ComponentTypeContainer}
	if !ch.parsed {
		conf = confUnresolved
		c.BOMRef = "container:" + ch.raw
		c.Name = ch.raw
		props = append(props, prop("image:unresolved", "true"), prop("image:digest", "unresolved"))
	} else {
		img := ch.image
		c.BOMRef = "container:" + img.String()
		c.Name = img.Name()
		c.Version = img.Tag
		var dg string
		if len(digests) > 0 {
			dg = digests[0]
			c.Version = dg
			var hashes []cdx.Hash
			for _, x := range digests {
				if algo, val, ok := strings.Cut(x, ":"); ok && algo == "sha256" {
					hashes = append(hashes, cdx.Hash{Algorithm: cdx.HashAlgoSHA256, Value: strings.ToLower(val)})
				}
				props = append(props, prop("image:digest", x))
			}
			if len(hashes) > 0 {
				c.Hashes = &hashes
			}
		} else {
			props = append(props, prop("image:digest", "unresolved"))
		}
		if img.Tag != "" {
			props = append(props, prop("image:tag", img.Tag))
		}
		c.PackageURL = img.PURL(dg)
	}
	props = append(props, prop("confidence", conf))
	c.Properties = sortProps(props)
	c.Evidence = evidence(ch.proofs, conf, versionClaim{})
	return c
}

// evidence turns proofs into CycloneDX 1.6 component evidence: one identity
// for the name (every method that named it), one for the version, and the
// locators as occurrences.
func evidence(ps proofs, conf string, v versionClaim) *cdx.Evidence {
	if len(ps) == 0 {
		return nil
	}
	list := slices.Clone(ps)
	slices.SortFunc(list, func(a, b proof) int {
		if ra, rb := confRank(a.conf), confRank(b.conf); ra != rb {
			return rb - ra
		}
		if c := strings.Compare(a.value, b.value); c != 0 {
			return c
		}
		return strings.Compare(a.locator, b.locator)
	})
	methods := make([]cdx.EvidenceIdentityMethod, 0, len(list))
	locs := make([]string, 0, len(list))
	for i, p := range list {
		// Sorted by confidence first, so a value seen at two confidences keeps the strongest.
		if i == 0 || !methodSeen(methods, p.value) {
			methods = append(methods, cdx.EvidenceIdentityMethod{Technique: technique, Confidence: score(p.conf), Value: p.value})
		}
		if p.locator != "" {
			locs = append(locs, p.locator)
		}
	}
	slices.Sort(locs)
	locs = slices.Compact(locs)
	ids := []cdx.EvidenceIdentity{{Field: cdx.EvidenceIdentityFieldTypeName, Confidence: score(conf), Methods: &methods}}
	if v.version != "" {
		ids = append(ids, cdx.EvidenceIdentity{
			Field: cdx.EvidenceIdentityFieldTypeVersion, Confidence: score(v.proof.conf), ConcludedValue: v.version,
			Methods: &[]cdx.EvidenceIdentityMethod{{Technique: technique, Confidence: score(v.proof.conf), Value: v.proof.value}},
		})
	}
	e := &cdx.Evidence{Identity: &cdx.EvidenceIdentityChoice{Identities: &ids}}
	if len(locs) > 0 {
		occ := make([]cdx.EvidenceOccurrence, len(locs))
		for i, l := range locs {
			occ[i].Location = l
		}
		e.Occurrences = &occ
	}
	return e
}

// methodSeen: methods are appended in value order within a confidence, so a
// repeated value is usually the last one; a short scan back covers the rest.
func methodSeen(ms []cdx.EvidenceIdentityMethod, v string) bool {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Value == v {
			return true
		}
	}
	return false
}

var scores = [...]float32{0.2, 0.6, 1.0}

// score points into a fixed table: confidences are never written through.
func score(conf string) *float32 {
	switch conf {
	case confDeclared:
		return &scores[2]
	case confInferred:
		return &scores[1]
	}
	return &scores[0]
}
func summarize(d *detection) Summary {
	var s Summary
	names := make([]string, 0, len(d.runtimes))
	for n := range d.runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := d.runtimes[n]
		v, _ := h.bestVersion()
		s.Runtimes = append(s.Runtimes, RuntimeSummary{Name: n, Version: v.version, Confidence: h.conf})
	}
	keys := make([]string, 0, len(d.models))
	for k := range d.models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.Models = append(s.Models, d.models[k].name)
	}
	s.Roles = d.roles.sorted()
	return s
}
