package transformer

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/schemas"
)

// Confidence of a claim, and its number in CycloneDX evidence.
const (
	confDeclared   = "declared"
	confInferred   = "inferred"
	confUnresolved = "unresolved"
)

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

func (p *proofs) add(x proof) {
	if *p == nil {
		*p = make(proofs, 0, 4)
	}
	*p = append(*p, x)
}

// roleset is a small set of role names (a handful per workload).
type roleset []string

func (s *roleset) add(v string) {
	if v == "" || s.has(v) {
		return
	}
	if *s == nil {
		*s = make(roleset, 0, 4)
	}
	*s = append(*s, v)
}

func (s roleset) has(v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (s roleset) sorted() []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// keyed holds items by a string key in insertion order: a linear scan while
// there are few (the usual case), a map index past smallKeyed.
type keyed[T any] struct {
	keys  []string
	items []T
	index map[string]int
}

const smallKeyed = 16

func (k *keyed[T]) get(key string) (T, bool) {
	if k.index != nil {
		if i, ok := k.index[key]; ok {
			return k.items[i], true
		}
	} else {
		for i, x := range k.keys {
			if x == key {
				return k.items[i], true
			}
		}
	}
	var zero T
	return zero, false
}

// put adds key, which must not be present yet.
func (k *keyed[T]) put(key string, v T) {
	if k.keys == nil {
		k.keys = make([]string, 0, 4)
		k.items = make([]T, 0, 4)
	}
	k.keys = append(k.keys, key)
	k.items = append(k.items, v)
	switch {
	case k.index != nil:
		k.index[key] = len(k.keys) - 1
	case len(k.keys) > smallKeyed:
		k.index = make(map[string]int, 2*len(k.keys))
		for i, x := range k.keys {
			k.index[x] = i
		}
	}
}

func (k *keyed[T]) len() int { return len(k.keys) }

// strset is a set of non-empty strings in insertion order.
type strset struct {
	k keyed[struct{}]
}

func (s *strset) add(v string) {
	if v == "" || s.has(v) {
		return
	}
	s.k.put(v, struct{}{})
}

func (s *strset) has(v string) bool {
	_, ok := s.k.get(v)
	return ok
}

// list is the members in insertion order; not to be modified.
func (s *strset) list() []string { return s.k.keys }

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
	ref       string         // its bom-ref, set by build
	best      versionClaim   // bestVersion, set by build
	others    []string
}

// modelHit is one distinct model.
type modelHit struct {
	key       string
	name      string
	kind      string // hf, path, pvc, gcs, s3, oci, nim-image, url, name, unresolved
	hf        bool
	conf      string
	revisions strset
	roles     roleset
	proofs    proofs
	props     map[string]string
	ref       string // "model:" + key, set by build
	strong    bool   // a reference that stands alone; see strongModel
	oci       *Image // the image reference of an oci:// model, when it parses
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
}

// detection is everything Render found in one Inputs.
type detection struct {
	runtimes   keyed[*runtimeHit] // by runtime name
	models     keyed[*modelHit]   // by model key
	containers keyed[*containerHit]
	roles      roleset
	simulators []confOf // simulator name -> engine it imitates (in conf)
	noImage    []string // locators of image-less containers
	truncated  []string // the collector's marks of cuts not in a container
	workloadM  strset   // models with no runtime: the workload depends on them
	// listed, when not nil, holds the only models the BOM lists (it would
	// be too large with all of them); shrunk says what was left out.
	listed  map[string]bool
	shrunk  []string
	purpose string
	sc      *scratch // where hits come from
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
	sc       *scratch // where hits come from
	roles    roleset
	hits     []*runtimeHit // local hits, at most one per runtime
	backends []wrapperBackend
	// engines suggested by engine-only flags, the first evidence of each.
	engineFlags []namedProof
	settings    []cdx.Property
	models      strset
	images      strset
	// evidence for backends chosen by env, attached to the wrapper.
	backendProofs []namedProof
	// evidence naming an engine as a wrapper's backend, by engine.
	engineProofs []namedProof
	// model claims of the component's containers, and what its download
	// commands fetched, linked once every container has been read.
	pending   []pendingClaim
	downloads []download
}

func (c *compDetect) hitOf(name string) *runtimeHit {
	for _, h := range c.hits {
		if h.rule.Name == name {
			return h
		}
	}
	return nil
}

func (c *compDetect) hit(rule *runtimeRule, conf string, p proof) *runtimeHit {
	h := c.hitOf(rule.Name)
	if h == nil {
		h = c.sc.newHit(rule, conf)
		c.hits = append(c.hits, h)
	}
	h.conf = stronger(h.conf, conf)
	h.proofs.add(p)
	return h
}

// backend records that wrapper runs engine, with the evidence p.
func (c *compDetect) backend(wrapper, engine string, p proof) {
	found := false
	for i := range c.backends {
		if b := &c.backends[i]; b.wrapper == wrapper && b.engine == engine {
			b.conf = stronger(b.conf, p.conf)
			found = true
			break
		}
	}
	if !found {
		c.backends = append(c.backends, wrapperBackend{wrapper: wrapper, engine: engine, conf: stronger("", p.conf)})
	}
	c.engineProofs = append(c.engineProofs, namedProof{name: engine, p: p})
}

// setting records a setting; prop is its full property name.
func (c *compDetect) setting(prop, value string) {
	if value == "" || value == schemas.RedactedValue || unresolvedRef(value) {
		return
	}
	c.settings = append(c.settings, cdx.Property{Name: prop, Value: value})
}

func srcLocator(ct *schemas.Container, src int) string {
	if src < len(ct.Command) {
		return ct.Locator + ".command[" + strconv.Itoa(src) + "]"
	}
	return ct.Locator + ".args[" + strconv.Itoa(src-len(ct.Command)) + "]"
}

// detect runs the rules over in.
func (r *rules) detect(in *schemas.Inputs, sc *scratch) *detection {
	d := &sc.det
	d.purpose, d.sc = r.kindPurpose[in.Workload.Kind], sc
	digests := digestIndex(in.Digests, func(ref string) *parsedImage { return r.cache.parse(r, ref) })

	// Workload-level claims: the kind and workload fields.
	wl := &sc.wl
	wl.sc = sc
	for _, rt := range r.runtimes {
		if conf, ok := rt.kinds[in.Workload.Kind]; ok {
			wl.hit(rt, conf, proof{conf: conf, value: "kind " + in.Workload.Kind, locator: "kind"})
		}
	}
	r.fieldClaims(wl, in.Fields, d)
	d.truncations(in.Fields, nil, r)

	for len(sc.cds) < len(in.Components) {
		sc.cds = append(sc.cds, compDetect{})
	}
	comps := sc.cds[:len(in.Components)]
	for ci := range in.Components {
		c := &in.Components[ci]
		cd := &comps[ci]
		cd.sc = sc
		for _, role := range c.Roles {
			cd.roles.add(role)
		}
		r.labelRoles(cd, c)
		for k := range c.Containers {
			r.container(cd, &c.Containers[k], d, digests)
		}
		r.resolveClaims(cd, d, c)
		r.fieldClaims(cd, c.Fields, d)
		d.truncations(c.Fields, c.Containers, r)
	}
	// Roles are known once every container of the component has been read.
	all := d.roles[:0]
	for ci := range comps {
		for _, role := range comps[ci].roles {
			all.add(role)
		}
	}
	d.roles = all
	wl.roles = all
	r.resolveBackends(wl, nil)
	for ci := range comps {
		r.resolveBackends(&comps[ci], wl)
	}
	d.merge(wl)
	for ci := range comps {
		d.merge(&comps[ci])
	}
	for _, key := range wl.models.list() {
		if m, ok := d.models.get(key); ok {
			for _, role := range all {
				m.roles.add(role)
			}
		}
	}
	for ci := range comps {
		cd := &comps[ci]
		for _, key := range cd.images.list() {
			if ch, ok := d.containers.get(key); ok {
				for _, role := range cd.roles {
					ch.roles.add(role)
				}
			}
		}
		for _, key := range cd.models.list() {
			if m, ok := d.models.get(key); ok {
				for _, role := range cd.roles {
					m.roles.add(role)
				}
			}
		}
	}
	if d.purpose == "cache" {
		d.runtimes.reset()
	}
	for _, key := range d.models.keys {
		used := false
		for _, h := range d.runtimes.items {
			if h.models.has(key) {
				used = true
				break
			}
		}
		if !used {
			d.workloadM.add(key)
		}
	}
	return d
}

// labelRoles applies the role rules that read pod-template labels.
func (r *rules) labelRoles(cd *compDetect, c *schemas.Component) {
	if len(c.Labels) == 0 {
		return
	}
	for _, rr := range r.roles {
		if rr.Label == "" {
			continue
		}
		if v, ok := c.Labels[rr.Label]; ok && (len(rr.values) == 0 || rr.values[v]) {
			role := rr.Role
			if role == "" {
				role = v
			}
			cd.roles.add(role)
		}
	}
}

func envTruthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// ctrScope is what the claims of one container share.
type ctrScope struct {
	ct       *schemas.Container
	img      *parsedImage // nil when the image is missing or unparsed
	imageLoc string       // ct.Locator + ".image"
	// imageHits names the runtimes the image matched; matches are those
	// matches.
	imageHits []string
	matches   []imageMatch
}

// imageVersion is what the image says of the version of the engine of m:
// a repository capture, the tag read by the pattern's tag rule, or the
// tag as a version; "" when the tag is no version of that engine.
func (c *ctrScope) imageVersion(m imageMatch) (version, variant, how string) {
	img := &c.img.img
	switch {
	case m.version != "":
		return m.version, "", "repository " + img.Repository
	case m.tagNone || img.Tag == "":
		return "", "", ""
	case m.tagRE != nil:
		if sm := m.tagRE.FindStringSubmatch(img.Tag); sm != nil {
			if v := Version(sm[m.tagRE.SubexpIndex("version")]); v != "" {
				return v, "", c.img.tagHow
			}
		}
		return "", "", ""
	}
	return c.img.tagVersion, c.img.tagVariant, c.img.tagHow
}

// matchOf is the image match of the runtime named name, if any.
func (c *ctrScope) matchOf(name string) (imageMatch, bool) {
	for _, m := range c.matches {
		if m.rule.Name == name {
			return m, true
		}
	}
	return imageMatch{}, false
}

func (c *ctrScope) imageHit(name string) bool {
	for _, n := range c.imageHits {
		if n == name {
			return true
		}
	}
	return false
}

// loc is the locator of the command, args or env element src.
func (c *ctrScope) loc(src int) string {
	if src < 0 {
		return c.ct.Locator + ".env[" + strconv.Itoa(-1-src) + "]"
	}
	return srcLocator(c.ct, src)
}

// container reads one container: image, invocations, env.
func (r *rules) container(cd *compDetect, ct *schemas.Container, d *detection, digests map[string][]string) {
	var env map[string]string
	for _, e := range ct.Env {
		if e.Value != "" && !e.Redacted && e.From == nil {
			if env == nil {
				env = make(map[string]string, len(ct.Env))
			}
			env[e.Name] = e.Value
		}
	}
	simulator := ""
	x := &ctrScope{ct: ct, imageLoc: ct.Locator + ".image"}
	invs := parseArgs(ct.Command, ct.Args, ParseOptions{Env: env, Booleans: r.booleans}, &cd.sc.args, r.cache)
	for k, e := range ct.Env {
		if r.argsEnv[e.Name] && e.Value != "" && !e.Redacted {
			for _, words := range r.cache.shell(e.Value).expand(env) {
				ws := make([]Word, len(words))
				for i, w := range words {
					ws[i] = Word{Text: w, Src: -1 - k}
				}
				p := argParser{opt: ParseOptions{Booleans: r.booleans}}
				p.emit(Invocation{Words: ws}, false)
				invs = append(invs, p.out...)
			}
		}
	}
	infos := r.invocationInfos(invs, cd.sc)
	client := r.isClient(ct, invs, infos)
	if ct.Image == "" {
		d.noImage = append(d.noImage, ct.Locator)
	} else {
		pi := r.cache.parse(r, ct.Image)
		key := imageKey(ct.Image, pi)
		if pi.ok {
			x.img = pi
		}
		ch, found := d.containers.get(key)
		if !found {
			ch = d.sc.ctrPool.get()
			ch.key, ch.raw = key, ct.Image
			if pi.ok {
				ch.image = pi
			}
			d.containers.put(key, ch)
		}
		ch.proofs.add(proof{conf: confDeclared, value: pi.proofValue, locator: x.imageLoc})
		ch.containers.add(ct.Name)
		for _, dg := range digests[ct.Image] {
			ch.digests.add(dg)
		}
		if pi.ok {
			for _, dg := range digests[pi.str] {
				ch.digests.add(dg)
			}
			if pi.img.Digest != "" {
				ch.digests.add(pi.img.Digest)
			}
			info := pi.info
			if info.sim != nil {
				simulator = info.sim.Name
				ch.simulator = info.sim.Name
				found := false
				for i := range d.simulators {
					if d.simulators[i].name == info.sim.Name {
						d.simulators[i].conf, found = info.sim.Simulates, true
					}
				}
				if !found {
					d.simulators = append(d.simulators, confOf{name: info.sim.Name, conf: info.sim.Simulates})
				}
			} else if !client {
				r.imageClaims(cd, x, info)
			}
			if info.bakedModel != "" {
				how := "image"
				if info.byName {
					how = "image name"
				}
				r.addModel(cd, d, modelClaim{value: info.bakedModel, conf: confInferred, how: how, locator: x.imageLoc})
			}
		}
		// Container roles are added once the component's roles are final.
		cd.images.add(key)
	}

	argsOnly := len(ct.Command) == 0

	var revision string
	var models []modelClaim
	for ii := range invs {
		inv := &invs[ii]
		if simulator == "" && !client {
			r.commandClaims(cd, x, inv, infos[ii], argsOnly && inv.Program == "" && ii == 0, &models)
		}
		if argsOnly && inv.Program == "" && ii == 0 {
			// Flags that name the model only for an engine, when the
			// image's entrypoint is that engine.
			for _, m := range x.matches {
				for _, f := range inv.Flags {
					if f.HasValue && m.rule.modelFlags[f.Name] {
						models = append(models, modelClaim{value: f.Value, conf: confDeclared, how: "flag " + f.Name, locator: x.loc(f.ValueSrc)})
					}
				}
			}
		}
		for _, f := range inv.Flags {
			if !f.HasValue {
				r.flagRole(cd, f)
				continue
			}
			r.flagRole(cd, f)
			if name, ok := r.settingFlag[f.Name]; ok {
				cd.setting(name, f.Value)
			}
			if r.modelFlags[f.Name] {
				models = append(models, modelClaim{value: f.Value, hf: r.hfFlags[f.Name], conf: confDeclared,
					how: "flag " + f.Name, locator: x.loc(f.ValueSrc)})
			}
			if r.listFlags[f.Name] {
				models = append(models, listFlagModels(inv, f, x)...)
			}
			if r.revFlags[f.Name] && f.Value != schemas.RedactedValue && !unresolvedRef(f.Value) {
				revision = f.Value
			}
			for _, rt := range r.backendFlags[f.Name] {
				if eng, ok := rt.BackendFlag.Values[strings.ToLower(f.Value)]; ok && eng != "" {
					cd.backend(rt.Name, eng, proof{conf: confDeclared, value: "flag " + f.Name + "=" + f.Value, locator: x.loc(f.Src)})
				} else if !ok && !unresolvedRef(f.Value) {
					cd.backend(rt.Name, strings.ToLower(f.Value), proof{conf: confDeclared, value: "flag " + f.Name + "=" + f.Value, locator: x.loc(f.Src)})
				}
			}
		}
		for _, f := range inv.Flags {
			for _, en := range r.engineFlagOwners[f.Name] {
				seen := false
				for _, ef := range cd.engineFlags {
					if ef.name == en {
						seen = true
						break
					}
				}
				if !seen {
					cd.engineFlags = append(cd.engineFlags, namedProof{name: en, p: proof{conf: confInferred, value: "engine flag " + f.Name, locator: x.loc(f.Src)}})
				}
			}
		}
		for _, w := range inv.Words {
			wi := r.cache.word(r, w.Text)
			for _, role := range wi.roles {
				cd.roles.add(role)
			}
			if simulator == "" {
				for _, h := range wi.hints {
					cd.hit(h.rule, h.conf, proof{conf: h.conf, value: h.value, locator: x.loc(w.Src)})
				}
			}
		}
	}
	for k, e := range ct.Env {
		if e.Value == "" || e.Redacted || e.From != nil {
			continue
		}
		l := ct.Locator + ".env[" + strconv.Itoa(k) + "]"
		if name, ok := r.settingEnv[e.Name]; ok {
			cd.setting(name, e.Value)
		}
		if r.modelEnv[e.Name] {
			models = append(models, modelClaim{value: e.Value, hf: r.hfEnv[e.Name], conf: confDeclared, how: "env " + e.Name, locator: l})
		}
		if r.listEnv[e.Name] {
			for _, v := range strings.FieldsFunc(e.Value, func(c rune) bool { return c == ';' || c == ',' || c == ' ' }) {
				models = append(models, modelClaim{value: v, hf: true, conf: confDeclared, how: "env " + e.Name, locator: l})
			}
		}
		if r.revEnv[e.Name] && !unresolvedRef(e.Value) {
			revision = e.Value
		}
		if simulator == "" {
			for _, eb := range r.envRules[e.Name] {
				if envTruthy(e.Value) {
					p := proof{conf: confDeclared, value: "env " + e.Name + "=" + e.Value, locator: l}
					cd.backend(eb.runtime, eb.backend, p)
					cd.backendProofs = append(cd.backendProofs, namedProof{name: eb.runtime, p: p})
				}
			}
		}
	}
	for _, m := range models {
		if revision != "" {
			m.revision = revision
		}
		if simulator != "" {
			m.simulated = simulator
		}
		// A client's models are a server's elsewhere.
		m.weak = m.weak || client
		cd.pending = append(cd.pending, pendingClaim{claim: m, ct: ct})
	}
	cd.downloads = r.findDownloads(cd.downloads, ct, x, invs, infos)
}

// listFlagModels reads the models a list flag names: its value and the
// words after it up to the next flag, each "[NAME=]LOCATION".
func listFlagModels(inv *Invocation, f Flag, x *ctrScope) []modelClaim {
	var out []modelClaim
	add := func(v string, src int) {
		if _, loc, ok := strings.Cut(v, "="); ok {
			v = loc
		}
		if v != "" && v != "all" {
			out = append(out, modelClaim{value: v, conf: confDeclared, how: "flag " + f.Name, locator: x.loc(src)})
		}
	}
	add(f.Value, f.ValueSrc)
	after := false
	for _, w := range inv.Words {
		if w.Src == f.ValueSrc && w.Text == f.Value {
			after = true
			continue
		}
		if !after {
			continue
		}
		if strings.HasPrefix(w.Text, "-") {
			break
		}
		add(w.Text, w.Src)
	}
	return out
}

// resolveClaims links the model claims of one component to their sources
// (an image volume, a download) and records them, then the downloads
// themselves and the image volumes no claim named.
func (r *rules) resolveClaims(cd *compDetect, d *detection, c *schemas.Component) {
	var used map[string]bool
	if len(c.Volumes) > 0 {
		used = map[string]bool{}
	}
	var served []bool // downloads a server path is linked to
	for i := range cd.pending {
		pc := &cd.pending[i]
		m, linked, k := r.linkClaim(c, pc, cd.downloads)
		if linked && used != nil {
			used[m.value] = true
		}
		if k >= 0 {
			if served == nil {
				served = make([]bool, len(cd.downloads))
			}
			served[k] = true
		}
		r.addModel(cd, d, m)
	}
	for k, dl := range cd.downloads {
		if served != nil && served[k] {
			// The path is the server's, which its claim gave.
			dl.claim.path = ""
		}
		r.addModel(cd, d, dl.claim)
	}
	if used != nil {
		for _, m := range volumeClaims(c, used) {
			r.addModel(cd, d, m)
		}
	}
}

// isListed says whether the BOM lists the model key.
func (d *detection) isListed(key string) bool { return d.listed == nil || d.listed[key] }

// imageKey is the key of the container component of image: the image as
// parsed, or as written when it does not parse.
func imageKey(image string, pi *parsedImage) string {
	if pi.ok {
		return pi.str
	}
	return image
}

// truncations reads the collector's marks of what it cut
// (schemas.FieldTruncated) among fields: a mark whose locator is in one of
// containers goes to that container's component, any other to the
// workload. Each becomes a bomstream:truncated property, "locator: what was
// kept, whole sha256:...".
func (d *detection) truncations(fields []schemas.Field, containers []schemas.Container, r *rules) {
	for i := range fields {
		f := &fields[i]
		if f.Name != schemas.FieldTruncated {
			continue
		}
		text := f.Value
		if f.Locator != "" {
			text = f.Locator + ": " + f.Value
		}
		var ch *containerHit
		for k := range containers {
			ct := &containers[k]
			if ct.Image == "" || f.Locator != ct.Locator && !strings.HasPrefix(f.Locator, ct.Locator+".") {
				continue
			}
			ch, _ = d.containers.get(imageKey(ct.Image, r.cache.parse(r, ct.Image)))
			break
		}
		if ch != nil {
			ch.truncated = append(ch.truncated, text)
		} else {
			d.truncated = append(d.truncated, text)
		}
	}
}

func (r *rules) flagRole(cd *compDetect, f Flag) {
	for _, rr := range r.roles {
		if rr.Flag == "" || rr.Flag != f.Name {
			continue
		}
		if rr.Value == "" || (f.HasValue && strings.EqualFold(f.Value, rr.Value)) {
			cd.roles.add(rr.Role)
		}
	}
}

// imageClaims: image patterns give an inferred runtime, its version from the tag
// or a repository capture, and maybe a backend.
func (r *rules) imageClaims(cd *compDetect, x *ctrScope, info *imageInfo) {
	x.matches = info.matches
	for _, m := range info.matches {
		rt := m.rule
		h := cd.hit(rt, confInferred, proof{conf: confInferred, value: x.img.proofValue, locator: x.imageLoc})
		x.imageHits = append(x.imageHits, rt.Name)
		v, variant, how := x.imageVersion(m)
		if v != "" {
			h.versions = append(h.versions, versionClaim{version: v, variant: variant, proof: proof{conf: confInferred, value: how, locator: x.imageLoc}})
		}
		if m.backend != "" {
			cd.backend(rt.Name, m.backend, proof{conf: confInferred, value: x.img.proofValue, locator: x.imageLoc})
		}
	}
}

// commandClaims matches one invocation against the launch commands, the
// args-only patterns (for the first invocation of an args-only container whose
// image is the engine's) and takes positional models.
func (r *rules) commandClaims(cd *compDetect, x *ctrScope, inv *Invocation, info *invInfo, argsOnly bool, models *[]modelClaim) {
	src := 0
	if inv.Program != "" {
		src = inv.ProgramSrc
	} else if len(inv.Words) > 0 {
		src = inv.Words[0].Src
	}
	for _, hm := range info.matches {
		rt, p := hm.rule, hm.pattern
		if inv.Program == "" && (!argsOnly || !x.imageHit(rt.Name)) {
			continue
		}
		conf := confDeclared
		if p.conf != "" {
			conf = p.conf
		}
		h := cd.hit(rt, conf, proof{conf: conf, value: hm.value, locator: x.loc(src)})
		if m, ok := x.matchOf(rt.Name); ok && x.img != nil {
			if v, variant, how := x.imageVersion(m); v != "" {
				h.versions = append(h.versions, versionClaim{version: v, variant: variant, proof: proof{conf: confInferred, value: how, locator: x.imageLoc}})
			}
		}
		if p.backend != "" {
			cd.backend(rt.Name, p.backend, proof{conf: confDeclared, value: hm.value, locator: x.loc(src)})
		}
		for _, f := range inv.Flags {
			if f.HasValue && rt.modelFlags[f.Name] {
				*models = append(*models, modelClaim{value: f.Value, conf: confDeclared, how: "flag " + f.Name, locator: x.loc(f.ValueSrc)})
			}
		}
		if p.model {
			for _, w := range inv.Positionals {
				if rt.subcommands[w.Text] {
					continue
				}
				*models = append(*models, modelClaim{value: w.Text, conf: confDeclared, how: "positional", locator: x.loc(w.Src)})
				if !p.models {
					break
				}
			}
		}
	}
}

// invocationHead is the program and its first words joined by spaces, at most
// 512 bytes and, when words > 0, at most that many words with the program:
// launch patterns only look at the start.
func invocationHead(inv *Invocation, words int) (string, int) {
	const maxHead = 512
	maxWords := 8
	if words > 0 {
		maxWords = words
		if inv.Program != "" {
			maxWords--
		}
	}
	src := 0
	if inv.Program != "" {
		src = inv.ProgramSrc
	} else if len(inv.Words) > 0 {
		src = inv.Words[0].Src
	}
	// Size first, so that the head is built in one allocation.
	n, taken := len(inv.Program), 0
	for i, w := range inv.Words {
		if i >= maxWords || n >= maxHead {
			break
		}
		if n > 0 {
			n++
		}
		n += min(len(w.Text), maxHead)
		taken++
	}
	if n == 0 {
		return "", src
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(inv.Program)
	for _, w := range inv.Words[:taken] {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		t := w.Text
		if len(t) > maxHead {
			t = t[:maxHead]
		}
		b.WriteString(t)
	}
	return b.String(), src
}

// fieldClaims reads kind fields: runtime names, versions, settings and models.
func (r *rules) fieldClaims(cd *compDetect, fields []schemas.Field, d *detection) {
	var version *schemas.Field
	var fieldHits []*runtimeHit
	var hfNS, hfName, hfLoc string
	for i := range fields {
		f := &fields[i]
		switch f.Name {
		case "runtimeVersion":
			version = f
		case "hfNamespace":
			hfNS, hfLoc = f.Value, f.Locator
		case "hfModelName":
			hfName = f.Value
			if hfLoc == "" {
				hfLoc = f.Locator
			}
		}
		for _, rt := range r.fieldRules[f.Name] {
			for _, fm := range rt.fields {
				if fm.name != f.Name {
					continue
				}
				for _, re := range fm.res {
					if re.MatchString(f.Value) {
						p := proof{conf: confDeclared, value: "field " + f.Name + "=" + f.Value, locator: f.Locator}
						fieldHits = append(fieldHits, cd.hit(rt, confDeclared, p))
						// A wrapper's backendFramework names its engine.
						for _, w := range r.wrappersOf[rt.Name] {
							cd.backend(w.Name, rt.Name, p)
						}
						break
					}
				}
			}
		}
		if name, ok := r.settingField[f.Name]; ok {
			cd.setting(name, f.Value)
		}
		if r.modelFields[f.Name] {
			r.addModel(cd, d, modelClaim{value: f.Value, conf: confDeclared, how: "field " + f.Name, locator: f.Locator, adapter: r.adapterFields[f.Name]})
		}
		r.modelFieldClaims(cd, d, fields, f)
	}
	r.versionFieldClaims(cd, fields)
	r.defaultClaims(cd, fields)
	if version != nil {
		if v, variant := ParseVersion(version.Value); v != "" {
			for _, h := range fieldHits {
				h.versions = append(h.versions, versionClaim{version: v, variant: variant, proof: proof{conf: confDeclared, value: "field runtimeVersion=" + version.Value, locator: version.Locator}})
			}
		}
	}
	if hfNS != "" && hfName != "" {
		r.addModel(cd, d, modelClaim{value: hfNS + "/" + hfName, hf: true, conf: confDeclared, how: "fields hfNamespace+hfModelName", locator: hfLoc})
	} else if hfName != "" {
		r.addModel(cd, d, modelClaim{value: hfName, hf: true, conf: confDeclared, how: "field hfModelName", locator: hfLoc})
	}
}

// resolveBackends pairs wrappers (Dynamo, NIM, KServe) with the engines they
// run in this component: a declared backend, an engine found beside them, an
// engine-only flag, or the wrapper's default.
func (r *rules) resolveBackends(cd *compDetect, wl *compDetect) {
	var wrappers []*runtimeHit
	for _, h := range cd.hits {
		if len(h.rule.wraps) > 0 {
			wrappers = append(wrappers, h)
		}
	}
	if wl != nil {
		for _, h := range wl.hits {
			if len(h.rule.wraps) > 0 && cd.hitOf(h.rule.Name) == nil {
				// The kind's wrapper also runs here: give it a local hit so the
				// component's roles, backends and settings reach it.
				lh := cd.sc.newHit(h.rule, h.conf)
				cd.hits = append(cd.hits, lh)
				wrappers = append(wrappers, lh)
			}
		}
	}
	slices.SortFunc(wrappers, func(a, b *runtimeHit) int { return strings.Compare(a.rule.Name, b.rule.Name) })
	var engines []string
	for _, w := range wrappers {
		wn := w.rule.Name
		chosen := false
		for _, bp := range cd.backendProofs {
			if bp.name == wn {
				w.proofs.add(bp.p)
			}
		}
		engines = engines[:0]
		for _, b := range cd.backends {
			if b.wrapper == wn {
				engines = append(engines, b.engine)
			}
		}
		sort.Strings(engines)
		for _, eng := range engines {
			var conf string
			for _, b := range cd.backends {
				if b.wrapper == wn && b.engine == eng {
					conf = b.conf
				}
			}
			chosen = true
			w.backends = strengthen(w.backends, eng, conf)
			if er := r.byName[eng]; er == nil || !w.rule.wraps[eng] {
				// A backend that is no engine of ours (huggingface): evidence on the wrapper.
				for _, ep := range cd.engineProofs {
					if ep.name == eng {
						w.proofs.add(ep.p)
					}
				}
			} else {
				eh := cd.hitOf(eng)
				if eh == nil {
					eh = cd.sc.newHit(er, conf)
					cd.hits = append(cd.hits, eh)
				}
				eh.conf = stronger(eh.conf, conf)
				for _, ep := range cd.engineProofs {
					if ep.name == eng {
						eh.proofs.add(ep.p)
					}
				}
				eh.wrappedBy.add(wn)
			}
		}
		// Engines found beside the wrapper in this component.
		for _, eh := range cd.hits {
			if en := eh.rule.Name; w.rule.wraps[en] {
				eh.wrappedBy.add(wn)
				w.backends = strengthen(w.backends, en, eh.conf)
				chosen = true
			}
		}
		if chosen {
			continue
		}
		engs := slices.Clone(cd.engineFlags)
		slices.SortFunc(engs, func(a, b namedProof) int { return strings.Compare(a.name, b.name) })
		for _, ef := range engs {
			if w.rule.wraps[ef.name] {
				eh := cd.hit(r.byName[ef.name], confInferred, ef.p)
				eh.wrappedBy.add(wn)
				w.backends = strengthen(w.backends, ef.name, confInferred)
				chosen = true
			}
		}
		if chosen || w.rule.Default == nil {
			continue
		}
		def := w.rule.Default
		ok := len(def.Roles) == 0
		for _, role := range def.Roles {
			if cd.roles.has(role) {
				ok = true
			}
		}
		if ok && r.byName[def.Backend] != nil {
			eh := cd.hit(r.byName[def.Backend], confInferred, proof{conf: confInferred, value: "default backend of " + wn, locator: "kind"})
			eh.wrappedBy.add(wn)
			w.backends = strengthen(w.backends, def.Backend, confInferred)
		}
	}
	// Settings and models belong to the engine that runs: the engines when
	// there are any, else the wrappers.
	engineRuns := false
	for _, h := range cd.hits {
		if len(h.rule.wraps) == 0 {
			engineRuns = true
			break
		}
	}
	for _, h := range cd.hits {
		if engineRuns && len(h.rule.wraps) > 0 {
			continue
		}
		h.settings = append(h.settings, cd.settings...)
		for _, m := range cd.models.list() {
			h.models.add(m)
		}
	}
	// The component's roles reach its hits when they are merged.
}

// merge folds one component's hits into the workload's; each hit takes the
// component's roles.
func (d *detection) merge(cd *compDetect) {
	for _, h := range cd.hits {
		name := h.rule.Name
		g, ok := d.runtimes.get(name)
		if !ok {
			g = d.sc.newHit(h.rule, h.conf)
			d.runtimes.put(name, g)
		}
		g.conf = stronger(g.conf, h.conf)
		g.versions = append(g.versions, h.versions...)
		g.proofs = append(g.proofs, h.proofs...)
		for _, b := range h.backends {
			g.backends = strengthen(g.backends, b.name, b.conf)
		}
		for _, w := range h.wrappedBy.list() {
			g.wrappedBy.add(w)
		}
		for _, role := range cd.roles {
			g.roles.add(role)
		}
		for _, m := range h.models.list() {
			g.models.add(m)
		}
		g.settings = append(g.settings, h.settings...)
	}
}

// bestVersion picks the version with the strongest evidence, then the smallest.
func (h *runtimeHit) bestVersion() (versionClaim, []string) {
	var best versionClaim
	for _, v := range h.versions {
		if best.version == "" || confRank(v.proof.conf) > confRank(best.proof.conf) ||
			confRank(v.proof.conf) == confRank(best.proof.conf) && (v.version < best.version || v.version == best.version && v.proof.locator < best.proof.locator) {
			best = v
		}
	}
	var others []string
	for _, v := range h.versions {
		if v.version != "" && v.version != best.version && !slices.Contains(others, v.version) {
			others = append(others, v.version)
		}
	}
	sort.Strings(others)
	return best, others
}

func digestIndex(ds []schemas.ImageDigest, parse func(string) *parsedImage) map[string][]string {
	if len(ds) == 0 {
		return nil
	}
	m := make(map[string][]string, len(ds))
	for _, d := range ds {
		dg := strings.TrimPrefix(d.Digest, "docker-pullable://")
		if i := strings.LastIndexByte(dg, '@'); i >= 0 {
			dg = dg[i+1:]
		}
		if !validDigest(dg) {
			continue
		}
		m[d.Image] = append(m[d.Image], dg)
		if p := parse(d.Image); p.ok && p.str != d.Image {
			m[p.str] = append(m[p.str], dg)
		}
	}
	return m
}

// modelFieldClaims reads the fields that name a model in other ways than
// models.fields: an image holding it, a preset name, a served name that
// is the model unless a source beside it says otherwise.
func (r *rules) modelFieldClaims(cd *compDetect, d *detection, fields []schemas.Field, f *schemas.Field) {
	if r.imageFields[f.Name] {
		r.addModel(cd, d, modelClaim{value: "oci://" + f.Value, conf: confDeclared, how: "field " + f.Name, locator: f.Locator, adapter: r.adapterFields[f.Name]})
	}
	if presets, ok := r.presets[f.Name]; ok {
		// A catalog name stands for its Hugging Face id; anything else is
		// kept as written (an org/name id is a Hugging Face id anyway).
		v, how, hf := f.Value, "field "+f.Name, false
		if id, ok := presets[strings.ToLower(v)]; ok {
			v, how, hf = id, how+"="+f.Value+" (preset)", true
		}
		r.addModel(cd, d, modelClaim{value: v, hf: hf, conf: confDeclared, how: how, locator: f.Locator})
	}
	for _, p := range r.pairs {
		if p.Name != f.Name {
			continue
		}
		parent := f.Locator
		if i := strings.LastIndexByte(parent, '.'); i >= 0 {
			parent = parent[:i]
		}
		sourced := false
		for i := range fields {
			if fields[i].Name == p.Source && strings.HasPrefix(fields[i].Locator, parent+".") {
				sourced = true
				break
			}
		}
		if sourced {
			if name, ok := r.settingField["modelName"]; ok {
				cd.setting(name, f.Value)
			}
			continue
		}
		r.addModel(cd, d, modelClaim{value: f.Value, hf: true, conf: confDeclared, how: "field " + f.Name, locator: f.Locator})
	}
}

// versionFieldClaims gives the runtimes of cd the versions their
// versionFields state.
func (r *rules) versionFieldClaims(cd *compDetect, fields []schemas.Field) {
	for i := range fields {
		f := &fields[i]
		for _, rt := range r.versionFields[f.Name] {
			h := cd.hitOf(rt.Name)
			if h == nil {
				continue
			}
			if v, variant := ParseVersion(f.Value); v != "" {
				h.versions = append(h.versions, versionClaim{version: v, variant: variant,
					proof: proof{conf: confDeclared, value: "field " + f.Name + "=" + f.Value, locator: f.Locator}})
			}
		}
	}
}

// defaultClaims adds the runtime an operator runs when its object names
// none: inferred, on the evidence of the field that makes it that
// operator's.
func (r *rules) defaultClaims(cd *compDetect, fields []schemas.Field) {
	for _, dr := range r.defaults {
		var at *schemas.Field
		unless := false
		for i := range fields {
			f := &fields[i]
			if slices.Contains(dr.Unless, f.Name) {
				unless = true
			}
			if f.Name != dr.Field || at != nil {
				continue
			}
			if len(dr.values) == 0 {
				at = f
			}
			for _, re := range dr.values {
				if re.MatchString(f.Value) {
					at = f
					break
				}
			}
		}
		if at == nil || unless {
			continue
		}
		cd.hit(dr.rule, confInferred, proof{conf: confInferred, value: "default runtime of field " + at.Name + "=" + at.Value, locator: at.Locator})
	}
}

// isClient reports whether a container talks to a model server elsewhere
// rather than serving: it runs an engine's client command (vllm bench), or
// passes a client flag (--base-url, --target) or env (OPENAI_BASE_URL).
// heads holds each invocation's rule matches.
func (r *rules) isClient(ct *schemas.Container, invs []Invocation, heads []*invInfo) bool {
	for ii := range invs {
		if heads[ii].client {
			return true
		}
		for _, f := range invs[ii].Flags {
			if r.clientFlags[f.Name] {
				return true
			}
		}
	}
	for _, e := range ct.Env {
		if r.cache.clientEnv(r, e.Name) {
			return true
		}
	}
	return false
}

// invocationInfos is what the rules say of the head of each of invs.
func (r *rules) invocationInfos(invs []Invocation, sc *scratch) []*invInfo {
	infos := sc.infos.take(len(invs))
	for ii := range invs {
		info := noInv
		if head, _ := invocationHead(&invs[ii], r.headWords); head != "" {
			info = r.cache.head(r, head, invs[ii].Program == "")
		}
		infos = append(infos, info)
	}
	return infos
}
