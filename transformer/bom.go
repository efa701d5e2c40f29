package transformer

import (
	"crypto/sha1"
	"slices"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/uuid"

	"github.com/bomstream/bomstream/schemas"
)

// bomInput is what a BOM says of the event besides the detection.
type bomInput struct {
	workload  schemas.Workload
	in        *schemas.Inputs
	time      time.Time
	inputHash string
}

// bomBuilder builds the cdx.BOM of a detection: everything, unless the BOM
// would be over its size limit (see shrink).
type bomBuilder struct {
	cfg Config
	in  bomInput
	d   *detection
	// evidenceCap, when not 0, is the most identity methods and
	// occurrences listed in one component's evidence.
	evidenceCap int
	// listed, when not nil, holds the only models the BOM lists; notes say
	// what was left out (bomstream:truncated properties of the workload).
	listed map[string]bool
	notes  []string
	// runtimes, models and containers are what the last build listed,
	// each sorted by name or key.
	runtimes   []listedRuntime
	models     []*modelHit
	containers []*containerHit
	// x, parts and wlDeps are the last build's BOM, its components' parts
	// and the workload's dependencies. A build reuses them, and the lists
	// in them, and so do the next renders (see renderState): each build
	// sets every field it uses.
	x      bomParts
	parts  []componentParts
	wlDeps []string
	// scores are the CycloneDX confidences the evidence points to.
	scores [3]float32
	// st holds the encode buffer.
	st *renderState
	// purls remembers the Hugging Face purls of model ids (see hfPURL).
	purls *memo[string]
	// tools is the Renderer's metadata.tools.
	tools *cdx.ToolsChoice
}

// reset readies b for another render: it keeps the capacity of its
// lists, up to maxKept elements, and drops the rest. What the lists held
// is overwritten by the next build, not cleared: the pool drops states at
// every GC, so that what they keep alive is bounded too.
func (b *bomBuilder) reset() {
	b.cfg, b.in, b.d = Config{}, bomInput{}, nil
	b.evidenceCap, b.listed, b.notes = 0, nil, nil
	b.st, b.purls, b.tools = nil, nil, nil
	b.runtimes, b.models, b.containers = kept(b.runtimes), kept(b.models), kept(b.containers)
	for i := range b.parts {
		x := &b.parts[i]
		x.props, x.hashes, x.ev.methods, x.ev.occ = kept(x.props), kept(x.hashes), kept(x.ev.methods), kept(x.ev.occ)
	}
	b.parts, b.wlDeps = kept(b.parts), kept(b.wlDeps)
	b.x.comps, b.x.deps, b.x.wlProps = kept(b.x.comps), kept(b.x.deps), kept(b.x.wlProps)
	for i := range b.x.dependsOn {
		b.x.dependsOn[i] = kept(b.x.dependsOn[i])
	}
	b.x.dependsOn = kept(b.x.dependsOn)
}

// maxKept bounds the elements of a list a builder keeps between renders.
const maxKept = 256

// kept is s emptied, for reuse; nil when its capacity is past maxKept.
func kept[T any](s []T) []T {
	if cap(s) > maxKept {
		return nil
	}
	return s[:0]
}

// encode builds the BOM and encodes it into the state's buffer: the bytes
// returned are valid until the next encode.
func (b *bomBuilder) encode() ([]byte, error) {
	out, err := encode(b.st.out, b.build())
	if err == nil && cap(out) >= cap(b.st.out) {
		b.st.out = out[:0]
	}
	return out, err
}

// listedRuntime is a runtime as the BOM lists it.
type listedRuntime struct {
	h      *runtimeHit
	ref    string       // its bom-ref
	best   versionClaim // see bestVersion
	others []string
}

// bomParts is a BOM and what its pointers point to, but the components'
// parts.
type bomParts struct {
	bom      cdx.BOM
	meta     cdx.Metadata
	workload cdx.Component
	wlProps  []cdx.Property
	comps    []cdx.Component
	deps     []cdx.Dependency
	// dependsOn holds the dependsOn lists of the workload, then of each
	// runtime.
	dependsOn [][]string
}

// componentParts is what the pointers of one component point to.
type componentParts struct {
	props  []cdx.Property
	hashes []cdx.Hash
	ev     evidenceParts
}

// isListed says whether the BOM lists the model key.
func (b *bomBuilder) isListed(key string) bool { return b.listed == nil || b.listed[key] }

// build makes the BOM: the workload as metadata.component, one component
// per runtime, model and image, each sorted by name, and the dependencies
// workload -> runtimes -> models, wrapper -> engine and workload ->
// containers.
func (b *bomBuilder) build() *cdx.BOM {
	b.list()
	n := len(b.runtimes) + len(b.models) + len(b.containers)
	x := &b.x
	x.comps = slices.Grow(x.comps[:0], n)[:n]
	x.deps = slices.Grow(x.deps[:0], 1+n)[:1]
	x.dependsOn = slices.Grow(x.dependsOn[:0], 1+len(b.runtimes))[:1+len(b.runtimes)]
	b.parts = slices.Grow(b.parts[:0], n)[:n]
	wlDeps := slices.Grow(b.wlDeps[:0], n+b.d.workloadM.len())
	k := 0 // the next component
	for i := range b.runtimes {
		lr := &b.runtimes[i]
		b.runtimeComponent(&x.comps[k], lr, &b.parts[k])
		k++
		x.deps = append(x.deps, cdx.Dependency{Ref: lr.ref, Dependencies: uniqSorted(&x.dependsOn[1+i], b.runtimeDeps(x.dependsOn[1+i][:0], lr))})
		wlDeps = append(wlDeps, lr.ref)
	}
	for _, m := range b.models {
		b.modelComponent(&x.comps[k], m, &b.parts[k])
		k++
		x.deps = append(x.deps, cdx.Dependency{Ref: m.ref})
	}
	for _, key := range b.d.workloadM.list() {
		if b.isListed(key) {
			wlDeps = append(wlDeps, b.modelRef(key))
		}
	}
	for _, ch := range b.containers {
		c := &x.comps[k]
		b.containerComponent(c, ch, &b.parts[k])
		k++
		wlDeps = append(wlDeps, c.BOMRef)
		x.deps = append(x.deps, cdx.Dependency{Ref: c.BOMRef})
	}
	b.wlDeps = wlDeps
	x.deps[0] = cdx.Dependency{Ref: workloadRef, Dependencies: uniqSorted(&x.dependsOn[0], wlDeps)}
	slices.SortStableFunc(x.deps[1:], func(a, b cdx.Dependency) int { return strings.Compare(a.Ref, b.Ref) })
	x.bom = cdx.BOM{
		JSONSchema:   schemaURL16,
		BOMFormat:    cdx.BOMFormat,
		SpecVersion:  cdx.SpecVersion1_6,
		SerialNumber: serialNumber(b.in.inputHash, b.cfg.Version),
		Version:      1,
		Metadata:     b.metadata(x),
		Dependencies: &x.deps,
	}
	if n > 0 {
		x.bom.Components = &x.comps
	}
	return &x.bom
}

// list lists the runtimes sorted by name, each with its bom-ref and
// versions, the listed models sorted by key and the images sorted by key.
func (b *bomBuilder) list() {
	b.runtimes = b.runtimes[:0]
	for _, e := range b.d.runtimes.entries {
		lr := listedRuntime{h: e.item, ref: e.item.rule.ref}
		lr.best, lr.others = e.item.bestVersion()
		if lr.best.version != "" {
			lr.ref += "@" + lr.best.version
		}
		b.runtimes = append(b.runtimes, lr)
	}
	slices.SortFunc(b.runtimes, func(x, y listedRuntime) int { return strings.Compare(x.h.rule.Name, y.h.rule.Name) })
	b.models = b.models[:0]
	for _, e := range b.d.models.entries {
		if b.isListed(e.key) {
			b.models = append(b.models, e.item)
		}
	}
	slices.SortFunc(b.models, func(x, y *modelHit) int { return strings.Compare(x.key, y.key) })
	b.containers = b.containers[:0]
	for _, e := range b.d.containers.entries {
		b.containers = append(b.containers, e.item)
	}
	slices.SortFunc(b.containers, func(x, y *containerHit) int { return strings.Compare(x.key, y.key) })
}

// runtimeDeps appends to out what a runtime depends on: a wrapper on the
// engines it runs, an engine on its listed models.
func (b *bomBuilder) runtimeDeps(out []string, lr *listedRuntime) []string {
	for i := range b.runtimes {
		if eng := &b.runtimes[i]; eng.h.wrappedBy.has(lr.h.rule.Name) {
			out = append(out, eng.ref)
		}
	}
	for _, m := range lr.h.models.list() {
		if b.isListed(m) {
			out = append(out, b.modelRef(m))
		}
	}
	return out
}

// modelRef is the bom-ref of the model key.
func (b *bomBuilder) modelRef(key string) string {
	if m, ok := b.d.models.get(key); ok {
		return m.ref
	}
	return modelRefPrefix + key
}

// metadata is the BOM's metadata, in x: the event's time, this tool, and
// the workload as the component the BOM describes.
func (b *bomBuilder) metadata(x *bomParts) *cdx.Metadata {
	w := b.in.workload
	x.workload = cdx.Component{
		BOMRef:     workloadRef,
		Type:       cdx.ComponentTypeApplication,
		Name:       w.Name,
		Group:      w.Namespace,
		Properties: sortProps(&x.wlProps, b.workloadProps(x.wlProps[:0])),
	}
	x.meta = cdx.Metadata{
		Timestamp: b.in.time.UTC().Format(time.RFC3339),
		Tools:     b.tools,
		Component: &x.workload,
	}
	return &x.meta
}

// workloadProps appends to props the properties of the workload: its
// identity and input hash, where it was read, and what detection says of
// it as a whole.
func (b *bomBuilder) workloadProps(props []cdx.Property) []cdx.Property {
	w, in, d := b.in.workload, b.in.in, b.d
	props = slices.Grow(props, 9+2*len(d.simulators)+len(d.noImage)+len(d.roles)+len(d.truncated)+len(b.notes)+len(d.weakEvidence))
	props = append(props,
		prop(propPrefix+"cluster", w.Cluster),
		prop(propPrefix+"namespace", w.Namespace),
		prop(propPrefix+"kind", w.Kind),
		prop(propPrefix+"apiVersion", w.APIVersion),
		prop(propPrefix+"uid", w.UID),
		prop(propPrefix+"inputHash", b.in.inputHash),
	)
	if in.Source != "" {
		props = append(props, prop(propPrefix+"source", in.Source))
	}
	if in.Profile != "" {
		props = append(props, prop(propPrefix+"profile", in.Profile))
	}
	if d.purpose != "" {
		props = append(props, prop(propPrefix+"purpose", d.purpose))
	}
	if len(d.weakEvidence) > 0 {
		// Serving decided on weaker signals than an engine's launch,
		// image or kind: said, with every signal it rests on.
		props = append(props, prop(propPrefix+"serving", confInferred))
		for _, e := range d.weakEvidence {
			props = append(props, prop(propPrefix+"serving:evidence", e))
		}
	}
	for _, sim := range d.simulators {
		props = append(props, prop(propPrefix+"simulator", sim.name))
		if sim.conf != "" {
			props = append(props, prop(propPrefix+"simulator:simulates", sim.conf))
		}
	}
	for _, loc := range d.noImage {
		props = append(props, prop(propPrefix+"image:unknown", loc))
	}
	for _, role := range d.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	for _, t := range d.truncated {
		props = append(props, prop(propPrefix+"truncated", t))
	}
	for _, t := range b.notes {
		props = append(props, prop(propPrefix+"truncated", t))
	}
	return props
}

// summary is the Summary of the last build.
func (b *bomBuilder) summary() Summary {
	var s Summary
	if len(b.runtimes) > 0 {
		s.Runtimes = make([]RuntimeSummary, 0, len(b.runtimes))
	}
	for _, lr := range b.runtimes {
		s.Runtimes = append(s.Runtimes, RuntimeSummary{Name: lr.h.rule.Name, Version: lr.best.version, Confidence: lr.h.conf})
	}
	if len(b.models) > 0 {
		s.Models = make([]string, 0, len(b.models))
	}
	for _, m := range b.models {
		s.Models = append(s.Models, m.name)
	}
	s.Roles = b.d.roles.sorted()
	return s
}

// facts are what the last build's components say to the findings rules
// (schemas.BOMFacts), read from the components as the JSON holds them.
func (b *bomBuilder) facts() *schemas.BOMFacts {
	var f schemas.BOMFacts
	for i := range b.x.comps {
		c := &b.x.comps[i]
		f.AddComponent(schemas.FactComponent{BOMRef: c.BOMRef, Type: string(c.Type), Name: c.Name, Version: c.Version, PURL: c.PackageURL,
			Licensed: c.Licenses != nil && len(*c.Licenses) > 0,
			Property: func(name string) (vals []string) {
				if c.Properties == nil {
					return nil
				}
				for _, p := range *c.Properties {
					if len(p.Name) == len(propPrefix)+len(name) && strings.HasPrefix(p.Name, propPrefix) && strings.HasSuffix(p.Name, name) {
						vals = append(vals, p.Value)
					}
				}
				return vals
			}})
	}
	return &f
}

// uniqSorted sorts xs, drops repeats and stores the list in *dst, which it
// returns; nil when xs is empty.
func uniqSorted(dst *[]string, xs []string) *[]string {
	sort.Strings(xs)
	*dst = slices.Compact(xs)
	if len(xs) == 0 {
		return nil
	}
	return dst
}

// serialNumber is the urn:uuid of the version 5 (SHA-1) UUID, in the URL
// namespace, of "bomstream:<inputHash>:<version>": uuid.NewSHA1's, hashed
// without its allocations.
func serialNumber(inputHash, version string) string {
	var buf [256]byte
	data := append(buf[:0], uuid.NameSpaceURL[:]...)
	data = append(data, "bomstream:"...)
	data = append(data, inputHash...)
	data = append(data, ':')
	data = append(data, version...)
	sum := sha1.Sum(data)
	var u uuid.UUID
	copy(u[:], sum[:])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.URN()
}
