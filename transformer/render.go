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
	"sync"
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
	// MaxBOMBytes bounds a BOM, so that it fits a stream message with its
	// headers (the embedded server takes 1 MiB). A BOM that would be larger
	// lists at most 16 methods and locations in each component's evidence,
	// and if that is not enough, only the models found first, as many as
	// fit; it says so in bomstream:truncated properties of the workload.
	// Default 768 KiB.
	MaxBOMBytes int
}

// DefaultMaxBOMBytes is the default of Config.MaxBOMBytes.
const DefaultMaxBOMBytes = 768 << 10

// minBOMBytes is the smallest MaxBOMBytes: a BOM with a few components.
const minBOMBytes = 16 << 10

func (c Config) maxBOM() int {
	if c.MaxBOMBytes == 0 {
		return DefaultMaxBOMBytes
	}
	return c.MaxBOMBytes
}

// Validate checks the fields of c.
func (c Config) Validate() error {
	if strings.ContainsAny(c.Version, "\n\r\t") {
		return fmt.Errorf("transformer config: Version %q has control characters", c.Version)
	}
	if c.MaxBOMBytes != 0 && c.MaxBOMBytes < minBOMBytes {
		return fmt.Errorf("transformer config: MaxBOMBytes %d is less than %d", c.MaxBOMBytes, minBOMBytes)
	}
	if c.RulesFile != "" {
		if _, err := os.Stat(c.RulesFile); err != nil {
			return fmt.Errorf("transformer config: RulesFile: %w", err)
		}
	}
	return nil
}

// Renderer turns WorkloadChange events into CycloneDX 1.6 BOMs. Its rules are
// compiled once; its only mutable state is memoized rule matches and pooled
// scratch memory, neither of which changes an answer, and it is safe for
// concurrent use.
type Renderer struct {
	cfg   Config
	rules *rules
	// scratch holds *scratch: memory for building and encoding, reused.
	scratch sync.Pool
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
	SkipNothing   = "no serving runtime and no model reference that stands alone"
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
	sc, _ := r.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer func() {
		sc.reset()
		r.scratch.Put(sc)
	}()
	res, d, bom, err := r.prepare(ev, sc)
	if err != nil || bom == nil {
		return res, err
	}
	out, err := sc.encode(bom)
	if err != nil {
		return res, fmt.Errorf("render %s: encode: %w", res.Workload, err)
	}
	if len(out) > r.cfg.maxBOM() {
		if out, err = r.shrink(ev, sc, d, len(out)); err != nil {
			return res, fmt.Errorf("render %s: %w", res.Workload, err)
		}
	}
	res.BOM = out
	res.BomHash = schemas.BomHash(res.BOM)
	res.Summary = summarize(d, sc)
	return res, nil
}

// prepare detects and builds the cdx.BOM of ev in sc; bom is nil when the
// event is skipped (res.Skipped says why) or fails. The detection and the BOM
// live in sc: they are valid until sc is reset.
func (r *Renderer) prepare(ev schemas.WorkloadChange, sc *scratch) (res Result, d *detection, bom *cdx.BOM, err error) {
	res = Result{Workload: ev.Data.Workload}
	if ev.IsTombstone() {
		res.Skipped = SkipTombstone
		return res, nil, nil, nil
	}
	in := ev.Data.Inputs
	if in == nil {
		return res, nil, nil, fmt.Errorf("render %s: %w", ev.Data.Workload, errNoInputs)
	}
	if in.Workload.Kind != "" {
		res.Workload = in.Workload
	}
	if r.rules.kindPurpose[res.Workload.Kind] == "template" {
		res.Skipped = SkipTemplate
		return res, nil, nil, nil
	}
	d = r.rules.detect(in, sc)
	// Without a serving runtime, only a model reference that stands alone
	// makes a BOM: a bare word in an env var or a flag does not.
	if d.runtimes.len() == 0 && !d.strongModel() {
		res.Skipped = SkipNothing
		return res, nil, nil, nil
	}
	inputHash := ev.Data.InputHash
	if inputHash == "" {
		h, err := schemas.InputHash(in)
		if err != nil {
			return res, nil, nil, fmt.Errorf("render %s: %w", res.Workload, err)
		}
		inputHash = h
	}
	return res, d, r.build(sc, res.Workload, in, ev, inputHash, d), nil
}

// ErrBOMTooLarge is wrapped by Render when a BOM is larger than
// Config.MaxBOMBytes even with no model listed.
var ErrBOMTooLarge = errors.New("bom too large")

// evidenceShrunk is the most identity methods and occurrences a
// component's evidence lists in a BOM shrunk to its limit.
const evidenceShrunk = 16

// shrink renders again the BOM of a detection whose full BOM (size bytes)
// is over the limit: first with at most evidenceShrunk methods and
// locations in each component's evidence, then, if that is not enough,
// listing only the models found first (d.models in detection order:
// workload fields, then components, containers and arguments in manifest
// order), as many as fit, found by a binary search. Each step is said in a
// bomstream:truncated property of the workload.
func (r *Renderer) shrink(ev schemas.WorkloadChange, sc *scratch, d *detection, size int) ([]byte, error) {
	limit := r.cfg.maxBOM()
	in, hash := ev.Data.Inputs, r.inputHash(ev)
	sc.evidenceCap = evidenceShrunk
	evidence := fmt.Sprintf("evidence: at most %d methods and locations listed per component, the BOM would be %d bytes, more than %d", evidenceShrunk, size, limit)
	d.shrunk = []string{evidence}
	out, err := sc.encode(r.build(sc, in.Workload, in, ev, hash, d))
	if err != nil || len(out) <= limit {
		return out, err
	}
	all := len(d.models.keys)
	try := func(k int) ([]byte, error) {
		d.listed = make(map[string]bool, k)
		for _, key := range d.models.keys[:k] {
			d.listed[key] = true
		}
		d.shrunk = []string{evidence, fmt.Sprintf("models: %d of %d listed, the first found", k, all)}
		return sc.encode(r.build(sc, in.Workload, in, ev, hash, d))
	}
	if out, err = try(0); err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: %d bytes with no model listed, more than %d", ErrBOMTooLarge, len(out), limit)
	}
	lo, hi := 0, all-1 // the most models that fit: lo fits, hi+1 does not
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		b, err := try(mid)
		if err != nil {
			return nil, err
		}
		if len(b) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return try(lo)
}

// inputHash is the event's input hash, computed when the event lacks it.
func (r *Renderer) inputHash(ev schemas.WorkloadChange) string {
	if h := ev.Data.InputHash; h != "" {
		return h
	}
	h, _ := schemas.InputHash(ev.Data.Inputs)
	return h
}

// encode writes bom as cdx's JSON encoder does (compact, no HTML escaping,
// a trailing newline). The reflection-free appendBOM covers what build makes;
// anything else goes to the cdx encoder.
func (sc *scratch) encode(bom *cdx.BOM) ([]byte, error) {
	if sc.out == nil {
		sc.out = make([]byte, 0, 8<<10)
	}
	if b, ok := appendBOM(sc.out[:0], bom); ok {
		sc.out = b
		return bytes.Clone(b), nil
	}
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(false).SetEscapeHTML(false)
	if err := enc.Encode(bom); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var errNoInputs = errors.New("observed event without inputs")

// serialNumber is urn:uuid:<v5-shaped uuid> of sha1(namespace, inputHash + version).
func serialNumber(inputHash, version string) string {
	// The URL namespace of RFC 4122, appendix C.
	ns := [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	var in [256]byte
	data := append(in[:0], ns[:]...)
	data = append(data, "bomstream:"...)
	data = append(data, inputHash...)
	data = append(data, ':')
	data = append(data, version...)
	u := sha1.Sum(data)
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	const prefix = "urn:uuid:"
	var b [len(prefix) + 36]byte
	copy(b[:], prefix)
	x := b[len(prefix):]
	hex.Encode(x[0:8], u[0:4])
	x[8] = '-'
	hex.Encode(x[9:13], u[4:6])
	x[13] = '-'
	hex.Encode(x[14:18], u[6:8])
	x[18] = '-'
	hex.Encode(x[19:23], u[8:10])
	x[23] = '-'
	hex.Encode(x[24:], u[10:16])
	return string(b[:])
}

// prop is a property; name is the full name, propPrefix included, so that
// the constant names cost nothing.
func prop(name, value string) cdx.Property {
	return cdx.Property{Name: name, Value: value}
}

// sortProps orders properties by name then value, and drops exact duplicates.
func (sc *scratch) sortProps(ps []cdx.Property) *[]cdx.Property {
	if len(ps) == 0 {
		return nil
	}
	// Sort indices, then copy once: moving the properties themselves
	// costs a write barrier per string while the GC marks.
	idx := sc.order(len(ps), func(i, j int32) int {
		a, b := &ps[i], &ps[j]
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	out := sc.props.take(len(ps))
	for _, i := range idx {
		if p := ps[i]; len(out) == 0 || p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	h := sc.propHdr.one()
	*h = out
	return h
}

func (r *Renderer) build(sc *scratch, w schemas.Workload, in *schemas.Inputs, ev schemas.WorkloadChange, inputHash string, d *detection) *cdx.BOM {
	wlProps := sc.props.take(9 + 2*len(d.simulators) + len(d.noImage) + len(d.roles) + len(d.truncated) + len(d.shrunk))
	wlProps = append(wlProps,
		prop(propPrefix+"cluster", w.Cluster),
		prop(propPrefix+"namespace", w.Namespace),
		prop(propPrefix+"kind", w.Kind),
		prop(propPrefix+"apiVersion", w.APIVersion),
		prop(propPrefix+"uid", w.UID),
		prop(propPrefix+"inputHash", inputHash),
	)
	if in.Source != "" {
		wlProps = append(wlProps, prop(propPrefix+"source", in.Source))
	}
	if in.Profile != "" {
		wlProps = append(wlProps, prop(propPrefix+"profile", in.Profile))
	}
	if d.purpose != "" {
		wlProps = append(wlProps, prop(propPrefix+"purpose", d.purpose))
	}
	for _, sim := range d.simulators {
		wlProps = append(wlProps, prop(propPrefix+"simulator", sim.name))
		if sim.conf != "" {
			wlProps = append(wlProps, prop(propPrefix+"simulator:simulates", sim.conf))
		}
	}
	for _, loc := range d.noImage {
		wlProps = append(wlProps, prop(propPrefix+"image:unknown", loc))
	}
	for _, role := range d.roles {
		wlProps = append(wlProps, prop(propPrefix+"role", role))
	}
	for _, t := range d.truncated {
		wlProps = append(wlProps, prop(propPrefix+"truncated", t))
	}
	for _, t := range d.shrunk {
		wlProps = append(wlProps, prop(propPrefix+"truncated", t))
	}
	mb := &sc.meta
	mb.tool[0] = cdx.Component{Type: cdx.ComponentTypeApplication, Name: toolName, Version: r.cfg.Version, BOMRef: "tool:" + toolName}
	mb.tl = mb.tool[:]
	mb.tools = cdx.ToolsChoice{Components: &mb.tl}
	mb.comp = cdx.Component{
		BOMRef:     workloadRef,
		Type:       cdx.ComponentTypeApplication,
		Name:       w.Name,
		Group:      w.Namespace,
		Properties: sc.sortProps(wlProps),
	}
	mb.meta = cdx.Metadata{Timestamp: ev.Time.UTC().Format(time.RFC3339), Tools: &mb.tools, Component: &mb.comp}

	runtimeNames := sc.sorted(d.runtimes.keys)
	modelKeys := sc.sorted(d.models.keys)
	if d.listed != nil {
		kept := modelKeys[:0]
		for _, k := range modelKeys {
			if d.listed[k] {
				kept = append(kept, k)
			}
		}
		modelKeys = kept
	}
	sc.runtimeNames, sc.modelKeys = runtimeNames, modelKeys
	imageKeys := sc.sorted(d.containers.keys)
	n := len(runtimeNames) + len(modelKeys) + len(imageKeys)
	comps := sc.comps.take(n)
	deps := sc.deps.take(1 + n)[:1]
	wlDeps := sc.strs.take(n)
	// Every ref and version is worked out once.
	for _, m := range d.models.items {
		m.ref = "model:" + m.key
	}
	modelRef := func(key string) string {
		if m, ok := d.models.get(key); ok {
			return m.ref
		}
		return "model:" + key
	}
	refs := sc.strs.take(len(runtimeNames))
	for _, rn := range runtimeNames {
		h, _ := d.runtimes.get(rn)
		h.best, h.others = h.bestVersion()
		h.ref = runtimeComponentRef(h)
		refs = append(refs, h.ref)
	}
	for i, rn := range runtimeNames {
		h, _ := d.runtimes.get(rn)
		comps = append(comps, sc.runtimeComponent(h))
		wlDeps = append(wlDeps, h.ref)
		dependsOn := sc.strs.take(len(runtimeNames) + h.models.k.len())
		// A wrapper depends on the engines it runs; engines on their models.
		for _, eh := range d.runtimes.items {
			if eh.wrappedBy.has(rn) {
				dependsOn = append(dependsOn, eh.ref)
			}
		}
		for _, m := range h.models.list() {
			if d.isListed(m) {
				dependsOn = append(dependsOn, modelRef(m))
			}
		}
		deps = append(deps, cdx.Dependency{Ref: refs[i], Dependencies: sc.uniqSorted(dependsOn)})
	}
	for _, k := range modelKeys {
		m, _ := d.models.get(k)
		comps = append(comps, sc.modelComponent(m))
		deps = append(deps, cdx.Dependency{Ref: m.ref})
	}
	for _, k := range d.workloadM.list() {
		if d.isListed(k) {
			wlDeps = append(wlDeps, modelRef(k))
		}
	}
	for _, k := range imageKeys {
		ch, _ := d.containers.get(k)
		c := sc.containerComponent(ch)
		comps = append(comps, c)
		wlDeps = append(wlDeps, c.BOMRef)
		deps = append(deps, cdx.Dependency{Ref: c.BOMRef})
	}
	deps[0] = cdx.Dependency{Ref: workloadRef, Dependencies: sc.uniqSorted(wlDeps)}
	slices.SortStableFunc(deps[1:], func(a, b cdx.Dependency) int { return strings.Compare(a.Ref, b.Ref) })
	mb.bom = cdx.BOM{
		JSONSchema:   schemaURL16,
		BOMFormat:    cdx.BOMFormat,
		SpecVersion:  cdx.SpecVersion1_6,
		SerialNumber: serialNumber(inputHash, r.cfg.Version),
		Version:      1,
		Metadata:     &mb.meta,
	}
	mb.deps = deps
	mb.bom.Dependencies = &mb.deps
	if len(comps) > 0 {
		mb.comps = comps
		mb.bom.Components = &mb.comps
	}
	return &mb.bom
}

// sorted returns a sorted copy of keys.
func (sc *scratch) sorted(keys []string) []string {
	out := append(sc.strs.take(len(keys)), keys...)
	sort.Strings(out)
	return out
}

func (sc *scratch) uniqSorted(xs []string) *[]string {
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
	h := sc.strHdr.one()
	*h = out
	return h
}

func runtimeComponentRef(h *runtimeHit) string {
	v := h.best
	if v.version != "" {
		return "runtime:" + h.rule.Name + "@" + v.version
	}
	return "runtime:" + h.rule.Name
}

func (sc *scratch) runtimeComponent(h *runtimeHit) cdx.Component {
	v, others := h.best, h.others
	props := sc.props.take(4 + 2*len(h.backends) + h.wrappedBy.k.len() + len(others) + len(h.roles) + len(h.settings))
	props = append(props,
		prop(propPrefix+"confidence", h.conf),
		prop(propPrefix+"runtime:confidence", h.conf),
		prop(propPrefix+"runtime:name", h.rule.Name),
	)
	for _, b := range h.backends {
		if b.conf == confDeclared {
			props = append(props, prop(propPrefix+"runtime:backend", b.name))
		} else {
			props = append(props, prop(propPrefix+"runtime:backend", b.name), prop(propPrefix+"runtime:backend:inferred", b.name))
		}
	}
	for _, w := range h.wrappedBy.list() {
		props = append(props, prop(propPrefix+"runtime:wrappedBy", w))
	}
	for _, o := range others {
		props = append(props, prop(propPrefix+"runtime:otherVersion", o))
	}
	if v.variant != "" {
		props = append(props, prop(propPrefix+"runtime:variant", v.variant))
	}
	for _, role := range h.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	props = append(props, h.settings...)
	name := h.rule.Title
	if name == "" {
		name = h.rule.Name
	}
	c := cdx.Component{
		BOMRef:     h.ref,
		Type:       cdx.ComponentTypeApplication,
		Name:       name,
		Version:    v.version,
		Properties: sc.sortProps(props),
		Evidence:   sc.evidence(h.proofs, h.conf, v),
	}
	if h.rule.PURL != "" {
		c.PackageURL = h.rule.PURL
		if v.version != "" {
			c.PackageURL += "@" + v.version
		}
	}
	return c
}

func (sc *scratch) modelComponent(m *modelHit) cdx.Component {
	revs := sc.sorted(m.revisions.list())
	props := sc.props.take(3 + len(revs) + len(m.roles) + len(m.props))
	props = append(props,
		prop(propPrefix+"confidence", m.conf),
		prop(propPrefix+"model:location-kind", m.kind),
	)
	if len(revs) == 0 && (m.oci == nil || m.oci.Digest == "") {
		props = append(props, prop(propPrefix+"model:unpinned", "true"))
	}
	if m.oci != nil && m.oci.Digest != "" {
		props = append(props, prop(propPrefix+"model:digest", m.oci.Digest))
	}
	for _, rev := range revs {
		props = append(props, prop(propPrefix+"model:revision", rev))
	}
	for _, role := range m.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	for k, v := range m.props {
		props = append(props, cdx.Property{Name: k, Value: v})
	}
	c := cdx.Component{
		BOMRef:     m.ref,
		Type:       cdx.ComponentTypeMachineLearningModel,
		Name:       m.name,
		Properties: sc.sortProps(props),
		Evidence:   sc.evidence(m.proofs, m.conf, versionClaim{}),
	}
	if m.hf {
		c.PackageURL = "pkg:huggingface/" + purlPath(m.name)
		if len(revs) > 0 {
			c.Version = revs[0]
			c.PackageURL += "@" + purlEscape(strings.ToLower(revs[0]), false)
		}
	}
	if m.oci != nil {
		c.PackageURL = m.oci.PURL("")
		c.Version = m.oci.Tag
		if m.oci.Digest != "" {
			c.Version = m.oci.Digest
		}
	}
	return c
}

func purlPath(id string) string {
	clean := true
	for i := 0; i < len(id); i++ {
		if c := id[i]; c != '/' && !purlSafe(c, false) {
			clean = false
			break
		}
	}
	if clean {
		return id
	}
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = purlEscape(p, false)
	}
	return strings.Join(parts, "/")
}

func (sc *scratch) containerComponent(ch *containerHit) cdx.Component {
	conf := confDeclared
	digests := sc.sorted(ch.digests.list())
	props := sc.props.take(5 + len(ch.roles) + ch.containers.k.len() + len(digests) + len(ch.truncated))
	for _, role := range ch.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	for _, t := range ch.truncated {
		props = append(props, prop(propPrefix+"truncated", t))
	}
	for _, n := range ch.containers.list() {
		props = append(props, prop(propPrefix+"container:name", n))
	}
	if ch.simulator != "" {
		props = append(props, prop(propPrefix+"simulator", ch.simulator))
	}
	c := cdx.Component{Type: cdx.ComponentTypeContainer}
	if ch.image == nil {
		conf = confUnresolved
		c.BOMRef = "container:" + ch.raw
		c.Name = ch.raw
		props = append(props, prop(propPrefix+"image:unresolved", "true"), prop(propPrefix+"image:digest", "unresolved"))
	} else {
		pi := ch.image
		img := &pi.img
		c.BOMRef = pi.ref
		c.Name = pi.name
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
				props = append(props, prop(propPrefix+"image:digest", x))
			}
			if len(hashes) > 0 {
				c.Hashes = &hashes
			}
		} else {
			props = append(props, prop(propPrefix+"image:digest", "unresolved"))
		}
		if img.Tag != "" {
			props = append(props, prop(propPrefix+"image:tag", img.Tag))
		}
		if dg == "" || dg == img.Digest {
			c.PackageURL = pi.purl
		} else {
			c.PackageURL = img.PURL(dg)
		}
	}
	props = append(props, prop(propPrefix+"confidence", conf))
	c.Properties = sc.sortProps(props)
	c.Evidence = sc.evidence(ch.proofs, conf, versionClaim{})
	return c
}

// evidenceBlock holds one component's evidence, allocated at once.
type evidenceBlock struct {
	e        cdx.Evidence
	choice   cdx.EvidenceIdentityChoice
	ids      [2]cdx.EvidenceIdentity
	idList   []cdx.EvidenceIdentity
	vMethod  [1]cdx.EvidenceIdentityMethod
	vMethods []cdx.EvidenceIdentityMethod
	methods  []cdx.EvidenceIdentityMethod
	occ      []cdx.EvidenceOccurrence
}

// evidence turns proofs into CycloneDX 1.6 component evidence: one identity
// for the name (every method that named it), one for the version, and the
// locators as occurrences.
func (sc *scratch) evidence(ps proofs, conf string, v versionClaim) *cdx.Evidence {
	if len(ps) == 0 {
		return nil
	}
	idx := sc.order(len(ps), func(i, j int32) int {
		a, b := &ps[i], &ps[j]
		if ra, rb := confRank(a.conf), confRank(b.conf); ra != rb {
			return rb - ra
		}
		if c := strings.Compare(a.value, b.value); c != 0 {
			return c
		}
		return strings.Compare(a.locator, b.locator)
	})
	eb := sc.blocks.one()
	methods := sc.methods.take(len(ps))
	nloc := 0
	for k, i := range idx {
		p := &ps[i]
		// Sorted by confidence first, so a value seen at two confidences keeps the strongest.
		if k == 0 || !methodSeen(methods, p.value) {
			methods = append(methods, cdx.EvidenceIdentityMethod{Technique: technique, Confidence: score(p.conf), Value: p.value})
		}
		if p.locator != "" {
			nloc++
		}
	}
	var occ []cdx.EvidenceOccurrence
	if nloc > 0 {
		// The locators, sorted and without repeats.
		byLoc := sc.order(len(ps), func(i, j int32) int { return strings.Compare(ps[i].locator, ps[j].locator) })
		occ = sc.occ.take(nloc)
		for _, i := range byLoc {
			if l := ps[i].locator; l != "" && (len(occ) == 0 || occ[len(occ)-1].Location != l) {
				occ = append(occ, cdx.EvidenceOccurrence{Location: l})
			}
		}
	}
	if c := sc.evidenceCap; c > 0 {
		methods, occ = methods[:min(len(methods), c)], occ[:min(len(occ), c)]
	}
	eb.methods = methods
	eb.ids[0] = cdx.EvidenceIdentity{Field: cdx.EvidenceIdentityFieldTypeName, Confidence: score(conf), Methods: &eb.methods}
	eb.idList = eb.ids[:1]
	if v.version != "" {
		eb.vMethod[0] = cdx.EvidenceIdentityMethod{Technique: technique, Confidence: score(v.proof.conf), Value: v.proof.value}
		eb.vMethods = eb.vMethod[:]
		eb.ids[1] = cdx.EvidenceIdentity{
			Field: cdx.EvidenceIdentityFieldTypeVersion, Confidence: score(v.proof.conf), ConcludedValue: v.version,
			Methods: &eb.vMethods,
		}
		eb.idList = eb.ids[:2]
	}
	eb.choice.Identities = &eb.idList
	eb.e.Identity = &eb.choice
	if len(occ) > 0 {
		eb.occ = occ
		eb.e.Occurrences = &eb.occ
	}
	return &eb.e
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

// summarize reads the detection after build, which sorted the names and
// chose the versions.
func summarize(d *detection, sc *scratch) Summary {
	var s Summary
	if len(sc.runtimeNames) > 0 {
		s.Runtimes = make([]RuntimeSummary, 0, len(sc.runtimeNames))
	}
	for _, n := range sc.runtimeNames {
		h, _ := d.runtimes.get(n)
		s.Runtimes = append(s.Runtimes, RuntimeSummary{Name: n, Version: h.best.version, Confidence: h.conf})
	}
	if len(sc.modelKeys) > 0 {
		s.Models = make([]string, 0, len(sc.modelKeys))
	}
	for _, k := range sc.modelKeys {
		m, _ := d.models.get(k)
		s.Models = append(s.Models, m.name)
	}
	s.Roles = d.roles.sorted()
	return s
}
