package transformer

import (
	"slices"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

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
	// runtimes and modelKeys are what the last build listed, sorted.
	runtimes  []*listedRuntime
	modelKeys []string
	// scores are the CycloneDX confidences the evidence points to.
	scores [3]float32
}

// newBOMBuilder is the builder of the BOM of d.
func newBOMBuilder(cfg Config, in bomInput, d *detection) *bomBuilder {
	return &bomBuilder{cfg: cfg, in: in, d: d, scores: [...]float32{0.2, 0.6, 1}}
}

// listedRuntime is a runtime as the BOM lists it.
type listedRuntime struct {
	h      *runtimeHit
	ref    string       // its bom-ref
	best   versionClaim // see bestVersion
	others []string
}

// isListed says whether the BOM lists the model key.
func (b *bomBuilder) isListed(key string) bool { return b.listed == nil || b.listed[key] }

// build makes the BOM: the workload as metadata.component, one component
// per runtime, model and image, each sorted by name, and the dependencies
// workload -> runtimes -> models, wrapper -> engine and workload ->
// containers.
func (b *bomBuilder) build() *cdx.BOM {
	b.listRuntimes()
	b.modelKeys = b.modelKeys[:0]
	for _, k := range sortedCopy(b.d.models.keys) {
		if b.isListed(k) {
			b.modelKeys = append(b.modelKeys, k)
		}
	}
	n := len(b.runtimes) + len(b.modelKeys) + b.d.containers.len()
	comps := make([]cdx.Component, 0, n)
	deps := append(make([]cdx.Dependency, 0, 1+n), cdx.Dependency{Ref: workloadRef})
	wlDeps := make([]string, 0, n+b.d.workloadM.k.len())
	for _, lr := range b.runtimes {
		comps = append(comps, b.runtimeComponent(lr))
		deps = append(deps, cdx.Dependency{Ref: lr.ref, Dependencies: uniqSorted(b.runtimeDeps(lr))})
		wlDeps = append(wlDeps, lr.ref)
	}
	for _, k := range b.modelKeys {
		m, _ := b.d.models.get(k)
		comps = append(comps, b.modelComponent(m))
		deps = append(deps, cdx.Dependency{Ref: modelRef(k)})
	}
	for _, k := range b.d.workloadM.list() {
		if b.isListed(k) {
			wlDeps = append(wlDeps, modelRef(k))
		}
	}
	for _, k := range sortedCopy(b.d.containers.keys) {
		ch, _ := b.d.containers.get(k)
		c := b.containerComponent(ch)
		comps = append(comps, c)
		wlDeps = append(wlDeps, c.BOMRef)
		deps = append(deps, cdx.Dependency{Ref: c.BOMRef})
	}
	deps[0].Dependencies = uniqSorted(wlDeps)
	slices.SortStableFunc(deps[1:], func(a, b cdx.Dependency) int { return strings.Compare(a.Ref, b.Ref) })
	bom := &cdx.BOM{
		JSONSchema:   schemaURL16,
		BOMFormat:    cdx.BOMFormat,
		SpecVersion:  cdx.SpecVersion1_6,
		SerialNumber: serialNumber(b.in.inputHash, b.cfg.Version),
		Version:      1,
		Metadata:     b.metadata(),
		Dependencies: &deps,
	}
	if len(comps) > 0 {
		bom.Components = &comps
	}
	return bom
}

// listRuntimes lists the runtimes sorted by name, each with its bom-ref and
// versions.
func (b *bomBuilder) listRuntimes() {
	b.runtimes = b.runtimes[:0]
	for _, name := range sortedCopy(b.d.runtimes.keys) {
		h, _ := b.d.runtimes.get(name)
		lr := &listedRuntime{h: h}
		lr.best, lr.others = h.bestVersion()
		lr.ref = "runtime:" + h.rule.Name
		if lr.best.version != "" {
			lr.ref += "@" + lr.best.version
		}
		b.runtimes = append(b.runtimes, lr)
	}
}

// runtimeDeps is what a runtime depends on: a wrapper on the engines it
// runs, an engine on its listed models.
func (b *bomBuilder) runtimeDeps(lr *listedRuntime) []string {
	var out []string
	for _, eng := range b.runtimes {
		if eng.h.wrappedBy.has(lr.h.rule.Name) {
			out = append(out, eng.ref)
		}
	}
	for _, m := range lr.h.models.list() {
		if b.isListed(m) {
			out = append(out, modelRef(m))
		}
	}
	return out
}

// modelRef is the bom-ref of the model key.
func modelRef(key string) string { return "model:" + key }

// metadata is the BOM's metadata: the event's time, this tool, and the
// workload as the component the BOM describes.
func (b *bomBuilder) metadata() *cdx.Metadata {
	w := b.in.workload
	tools := []cdx.Component{{Type: cdx.ComponentTypeApplication, Name: toolName, Version: b.cfg.Version, BOMRef: "tool:" + toolName}}
	return &cdx.Metadata{
		Timestamp: b.in.time.UTC().Format(time.RFC3339),
		Tools:     &cdx.ToolsChoice{Components: &tools},
		Component: &cdx.Component{
			BOMRef:     workloadRef,
			Type:       cdx.ComponentTypeApplication,
			Name:       w.Name,
			Group:      w.Namespace,
			Properties: sortProps(b.workloadProps()),
		},
	}
}

// workloadProps are the properties of the workload: its identity and input
// hash, where it was read, and what detection says of it as a whole.
func (b *bomBuilder) workloadProps() []cdx.Property {
	w, in, d := b.in.workload, b.in.in, b.d
	props := make([]cdx.Property, 0, 9+2*len(d.simulators)+len(d.noImage)+len(d.roles)+len(d.truncated)+len(b.notes))
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
	for _, lr := range b.runtimes {
		s.Runtimes = append(s.Runtimes, RuntimeSummary{Name: lr.h.rule.Name, Version: lr.best.version, Confidence: lr.h.conf})
	}
	for _, k := range b.modelKeys {
		m, _ := b.d.models.get(k)
		s.Models = append(s.Models, m.name)
	}
	s.Roles = b.d.roles.sorted()
	return s
}

// sortedCopy is a sorted copy of keys.
func sortedCopy(keys []string) []string {
	out := slices.Clone(keys)
	sort.Strings(out)
	return out
}

// uniqSorted sorts xs and drops repeats; nil when empty.
func uniqSorted(xs []string) *[]string {
	if len(xs) == 0 {
		return nil
	}
	sort.Strings(xs)
	xs = slices.Compact(xs)
	return &xs
}
