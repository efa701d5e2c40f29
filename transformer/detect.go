package transformer

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/imageref"
)

// Confidence of a claim, and its number in CycloneDX evidence.
const (
	confDeclared   = "declared"
	confInferred   = "inferred"
	confUnresolved = "unresolved"
)

// confRank orders confidences: declared over inferred over unresolved.
func confRank(c string) int {
	switch c {
	case confDeclared:
		return 3
	case confInferred:
		return 2
	case confUnresolved:
		return 1
	}
	return 0
}

// stronger returns the higher of two confidences.
func stronger(a, b string) string {
	if confRank(b) > confRank(a) {
		return b
	}
	return a
}

// proof is one piece of evidence: what was seen and where.
type proof struct {
	conf    string
	value   string // "command python3 -m vllm...", "image ...", "field backendFramework=vllm"
	locator string
}

// proofs may hold duplicates; evidence sorts and dedupes them once.
type proofs []proof

// add appends x; a first proof makes room for a few.
func (p *proofs) add(x proof) {
	if *p == nil {
		*p = make(proofs, 0, 4)
	}
	*p = append(*p, x)
}

// roleset is a small set of role names (a handful per workload).
type roleset []string

// add adds v unless it is empty or present.
func (s *roleset) add(v string) {
	if v == "" || s.has(v) {
		return
	}
	if *s == nil {
		*s = make(roleset, 0, 4)
	}
	*s = append(*s, v)
}

// addAll adds the members of vs, in order. An empty s with no room takes
// vs itself when vs is a set (no empty or repeated member), capped so that
// adding to either copies: rolesets are only ever added to.
func (s *roleset) addAll(vs []string) {
	if len(*s) == 0 && cap(*s) == 0 && isRoleset(vs) {
		*s = slices.Clip(vs)
		return
	}
	for _, v := range vs {
		s.add(v)
	}
}

// isRoleset reports whether vs holds no empty and no repeated member.
func isRoleset(vs []string) bool {
	for i, v := range vs {
		if v == "" || slices.Contains(vs[:i], v) {
			return false
		}
	}
	return true
}

// has reports whether v is in s.
func (s roleset) has(v string) bool {
	return slices.Contains(s, v)
}

// sorted is a sorted copy of s.
func (s roleset) sorted() []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// index holds items by a string key in insertion order. It looks keys up
// by a linear scan while there are few (the usual case: a handful of
// runtimes, models and images per workload), and through a map past
// smallIndex.
type index[T any] struct {
	entries []entry[T]
	pos     map[string]int
}

// entry is one key of an index and its item.
type entry[T any] struct {
	key  string
	item T
}

// smallIndex is the most keys an index or a strset scans.
const smallIndex = 16

// get returns the item of key.
func (x *index[T]) get(key string) (T, bool) {
	if i := x.find(key); i >= 0 {
		return x.entries[i].item, true
	}
	var zero T
	return zero, false
}

// find is the position of key, or -1.
func (x *index[T]) find(key string) int {
	if x.pos != nil {
		if i, ok := x.pos[key]; ok {
			return i
		}
		return -1
	}
	for i := range x.entries {
		if x.entries[i].key == key {
			return i
		}
	}
	return -1
}

// put adds key, which must not be present yet.
func (x *index[T]) put(key string, v T) {
	if x.entries == nil {
		x.entries = make([]entry[T], 0, 4)
	}
	x.entries = append(x.entries, entry[T]{key: key, item: v})
	switch {
	case x.pos != nil:
		x.pos[key] = len(x.entries) - 1
	case len(x.entries) > smallIndex:
		x.pos = make(map[string]int, 2*len(x.entries))
		for i := range x.entries {
			x.pos[x.entries[i].key] = i
		}
	}
}

// len is the number of keys.
func (x *index[T]) len() int { return len(x.entries) }

// strset is a set of non-empty strings in insertion order, scanned while
// small and looked up through a map past smallIndex.
type strset struct {
	keys []string
	pos  map[string]struct{}
}

// add adds v unless it is empty or present.
func (s *strset) add(v string) {
	if v == "" || s.has(v) {
		return
	}
	if s.keys == nil {
		s.keys = make([]string, 0, 4)
	}
	s.keys = append(s.keys, v)
	switch {
	case s.pos != nil:
		s.pos[v] = struct{}{}
	case len(s.keys) > smallIndex:
		s.pos = make(map[string]struct{}, 2*len(s.keys))
		for _, k := range s.keys {
			s.pos[k] = struct{}{}
		}
	}
}

// addAll adds the members of o. An empty s takes o's list itself while it
// is small, capped so that adding to either copies: sets are only ever
// added to.
func (s *strset) addAll(o *strset) {
	if len(s.keys) == 0 && o.pos == nil {
		s.keys = slices.Clip(o.keys)
		return
	}
	for _, v := range o.keys {
		s.add(v)
	}
}

// has reports whether v is in s.
func (s *strset) has(v string) bool {
	if s.pos != nil {
		_, ok := s.pos[v]
		return ok
	}
	return slices.Contains(s.keys, v)
}

// list is the members in insertion order; not to be modified.
func (s *strset) list() []string { return s.keys }

// len is the number of members.
func (s *strset) len() int { return len(s.keys) }

// versionClaim is a version of an engine and the proof of it.
type versionClaim struct {
	version string
	variant string // the build variant of the same tag or field (cu124, rocm, cpu, ...)
	proof   proof
}

// confOf is a name with a confidence (a wrapper's backend).
type confOf struct {
	name, conf string
}

// strengthen raises the confidence of name in cs to at least conf.
func strengthen(cs []confOf, name, conf string) []confOf {
	for i := range cs {
		if cs[i].name == name {
			cs[i].conf = stronger(cs[i].conf, conf)
			return cs
		}
	}
	return append(cs, confOf{name: name, conf: stronger("", conf)})
}

// runtimeHit is one detected engine, merged over the whole workload.
type runtimeHit struct {
	rule      *runtimeRule
	conf      string
	versions  []versionClaim
	backends  []confOf // backend -> confidence (wrappers)
	wrappedBy strset
	roles     roleset // on merged hits; a component's hits take its roles
	proofs    proofs
	settings  []cdx.Property // full property name and value; may repeat
	models    strset         // model keys that depend on this runtime
	// proofRoom holds the first proofs: a hit and they are one allocation.
	proofRoom [2]proof
}

// newRuntimeHit is a hit of rule at conf, with room for its first proofs.
func newRuntimeHit(rule *runtimeRule, conf string) *runtimeHit {
	h := &runtimeHit{rule: rule, conf: conf}
	h.proofs = h.proofRoom[:0]
	return h
}

// modelHit is one distinct model.
type modelHit struct {
	key       string
	ref       string // its bom-ref: modelRefPrefix + key
	name      string
	kind      string // hf, path, pvc, gcs, s3, oci, nim-image, url, name, unresolved
	hf        bool
	conf      string
	revisions strset
	roles     roleset
	proofs    proofs
	props     map[string]string
	strong    bool            // a reference that stands alone; see strongModel
	oci       *imageref.Image // the image reference of an oci:// model, when it parses
	// proofRoom holds the first proofs: a hit and they are one allocation.
	proofRoom [2]proof
}

// containerHit is one distinct image.
type containerHit struct {
	key        string
	image      *parsedImage // nil when unparsed
	raw        string
	roles      roleset
	proofs     proofs
	simulator  string
	digests    strset
	containers strset
	truncated  []string // the collector's marks of cuts in these containers
	// proofRoom holds the first proofs: a hit and they are one allocation.
	proofRoom [2]proof
}

// detection is everything Render found in one Inputs.
type detection struct {
	// room is the scratch space of the detection (sigs, units, scratch).
	room       *detectRoom
	runtimes   index[*runtimeHit] // by runtime name
	models     index[*modelHit]   // by model key
	containers index[*containerHit]
	roles      roleset
	simulators []confOf // simulator name -> engine it imitates (in conf)
	noImage    []string // locators of image-less containers
	truncated  []string // the collector's marks of cuts not in a container
	workloadM  strset   // models with no runtime: the workload depends on them
	purpose    string   // the kind's purpose (rules kinds): "", template, cache
	kind       string   // the workload's kind
	// declared says how the workload's kind, or a workload field, names
	// its engine or serves by construction ("" when it does not).
	declared string
	units    []unit   // every container, judged
	sigs     []signal // the signals of every unit
	serving  bool     // the workload serves a model
	// argRevision holds the revisions engines are pinned to whose models
	// no argument of theirs names (see pinFieldModels).
	argRevision strset
	// weakEvidence lists, when the workload serves on weaker signals than
	// an engine's launch, image or kind, the signals of its serving
	// containers ("signal weight: value @ locator").
	weakEvidence []string
}

// detectRoom is the space a detection works in and lets go of once its
// BOM is built: Render lends it from a pool (Renderer.room), so a render
// of a workload like the last one allocates none of it.
type detectRoom struct {
	sigs    []signal
	units   []unit
	scratch compDetect // see scratchComp
}

// namedProof is evidence about one wrapper or engine.
type namedProof struct {
	name string
	p    proof
}

// wrapperBackend is a backend claimed for a wrapper.
type wrapperBackend struct {
	wrapper, engine, conf string
}

// compDetect gathers the claims of one component before they are merged.
type compDetect struct {
	roles    roleset
	hits     []*runtimeHit // local hits, at most one per runtime
	backends []wrapperBackend
	// engines suggested by engine-only flags, the first evidence of each.
	engineFlags []namedProof
	settings    []cdx.Property
	models      strset
	// evidence for backends chosen by env, attached to the wrapper.
	backendProofs []namedProof
	// evidence naming an engine as a wrapper's backend, by engine.
	engineProofs []namedProof
	// model claims of the component's containers, and what its download
	// commands fetched, linked once every container has been read.
	pending   []pendingClaim
	downloads []download
	// roleRoom holds the first roles: most components have one or two.
	roleRoom [2]string
}

// hitOf is the local hit of the runtime named name, or nil.
func (c *compDetect) hitOf(name string) *runtimeHit {
	for _, h := range c.hits {
		if h.rule.Name == name {
			return h
		}
	}
	return nil
}

// hit records that rule runs here with confidence conf, on the evidence p.
func (c *compDetect) hit(rule *runtimeRule, conf string, p proof) *runtimeHit {
	h := c.runs(rule, conf)
	h.proofs.add(p)
	return h
}

// runs records that rule runs here with confidence conf, and returns its
// local hit.
func (c *compDetect) runs(rule *runtimeRule, conf string) *runtimeHit {
	h := c.hitOf(rule.Name)
	if h == nil {
		h = newRuntimeHit(rule, conf)
		if c.hits == nil {
			c.hits = make([]*runtimeHit, 0, 4)
		}
		c.hits = append(c.hits, h)
	}
	h.conf = stronger(h.conf, conf)
	return h
}

// backend records that wrapper runs engine, with the evidence p. A
// wrapper's engine is in c.backends once.
func (c *compDetect) backend(wrapper, engine string, p proof) {
	c.engineProofs = append(c.engineProofs, namedProof{name: engine, p: p})
	for i := range c.backends {
		if b := &c.backends[i]; b.wrapper == wrapper && b.engine == engine {
			b.conf = stronger(b.conf, p.conf)
			return
		}
	}
	c.backends = append(c.backends, wrapperBackend{wrapper: wrapper, engine: engine, conf: stronger("", p.conf)})
}

// setting records a setting; prop is its full property name.
func (c *compDetect) setting(prop, value string) {
	if value == "" || value == schemas.RedactedValue || unresolvedRef(value) {
		return
	}
	if c.settings == nil {
		c.settings = make([]cdx.Property, 0, 4)
	}
	c.settings = append(c.settings, cdx.Property{Name: prop, Value: value})
}

// srcLocator is the locator of element src of a container's command
// followed by its args.
func srcLocator(ct *schemas.Container, src int) string {
	if src < len(ct.Command) {
		return ct.Locator + ".command[" + strconv.Itoa(src) + "]"
	}
	return ct.Locator + ".args[" + strconv.Itoa(src-len(ct.Command)) + "]"
}

// detect runs the rules over in: the workload's kind and fields, then each
// component, then the wrappers' backends; the claims are merged over the
// workload.
//
// room, when not nil, is the space it works in: Render lends it from a
// pool.
func (r *rules) detect(in *schemas.Inputs, room *detectRoom) *detection {
	if room == nil {
		room = &detectRoom{}
	}
	d := &detection{purpose: r.kindPurpose[in.Workload.Kind], kind: in.Workload.Kind, room: room}
	digests := r.digestIndex(in.Digests)
	wl := &compDetect{}
	r.kindClaims(wl, in.Workload.Kind)
	r.fieldClaims(wl, in.Fields, d)
	switch {
	case len(wl.hits) > 0 && len(wl.hits[0].proofs) > 0:
		d.declared = wl.hits[0].proofs[0].value
	case r.serving.kinds[in.Workload.Kind] && in.Profile == "":
		d.declared = "kind " + in.Workload.Kind + " serves"
	}
	d.truncations(in.Fields, nil, r)
	comps := make([]compDetect, len(in.Components))
	n := 0
	for ci := range in.Components {
		n += len(in.Components[ci].Containers)
	}
	d.units = slices.Grow(room.units[:0], n+1) // one more for the kind fields' (fieldUnit)
	d.sigs = room.sigs[:0]
	for ci := range in.Components {
		r.component(&comps[ci], &in.Components[ci], d, digests)
	}
	// Roles are known once every container of every component has been read.
	if len(comps) > 1 {
		n := 0
		for ci := range comps {
			n += len(comps[ci].roles)
		}
		d.roles = make(roleset, 0, n)
	}
	for ci := range comps {
		d.roles.addAll(comps[ci].roles)
	}
	wl.roles = d.roles
	r.resolveBackends(wl, nil)
	for ci := range comps {
		r.resolveBackends(&comps[ci], wl)
	}
	d.merge(wl)
	for ci := range comps {
		d.merge(&comps[ci])
	}
	r.spreadRoles(d, wl, comps, in.Components)
	if d.purpose == "cache" {
		d.runtimes = index[*runtimeHit]{}
	}
	d.pinFieldModels()
	d.unusedModels()
	r.fieldUnit(d, in.Fields)
	d.serving = d.purpose != "cache" && (d.runtimes.len() > 0 || d.servingUnit() ||
		r.serving.kinds[in.Workload.Kind] && in.Profile == "")
	if d.serving {
		d.weakEvidence = weakEvidence(d)
	}
	return d
}

// pinFieldModels gives the one revision an engine is pinned to, when its
// model is named only by kind fields, to the Hugging Face models kind
// fields name that have none.
func (d *detection) pinFieldModels() {
	if d.argRevision.len() != 1 {
		return
	}
	rev := d.argRevision.list()[0]
	for _, me := range d.models.entries {
		m := me.item
		if !m.hf || m.revisions.len() > 0 {
			continue
		}
		fieldOnly := len(m.proofs) > 0
		for _, p := range m.proofs {
			fieldOnly = fieldOnly && strings.HasPrefix(p.value, "field ")
		}
		if fieldOnly {
			m.revisions.add(rev)
		}
	}
}

// servingUnit reports whether one of the workload's containers serves.
func (d *detection) servingUnit() bool {
	for i := range d.units {
		if d.units[i].serving {
			return true
		}
	}
	return false
}

// component reads one component: its roles, its containers, then the
// claims that need all of them, and its fields.
func (r *rules) component(cd *compDetect, c *schemas.Component, d *detection, digests map[string][]string) {
	cd.roles.addAll(roleset(c.Roles))
	r.labelRoles(cd, c)
	for k := range c.Containers {
		r.container(cd, c, &c.Containers[k], d, digests)
	}
	r.resolveClaims(cd, d, c)
	r.fieldClaims(cd, c.Fields, d)
	d.truncations(c.Fields, c.Containers, r)
}

// kindClaims: the kind of the workload names the runtimes it runs.
func (r *rules) kindClaims(wl *compDetect, kind string) {
	for _, rt := range r.runtimes {
		if conf, ok := rt.kinds[kind]; ok {
			wl.hit(rt, conf, proof{conf: conf, value: "kind " + kind, locator: "kind"})
		}
	}
}

// imageKey is the key of the container component of image: the image as
// parsed, or as written when it does not parse.
func imageKey(image string, pi *parsedImage) string {
	if pi.ok {
		return pi.str
	}
	return image
}
