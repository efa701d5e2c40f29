package transformer

import (
	"sort"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// Confidence of a claim, and its number in CycloneDX evidence.
const (
	confDeclared   = "declared"
	confInferred   = "inferred"
	confUnresolved = "unresolved"
)

func confScore(c string) float32 {
	switch c {
	case confDeclared:
		return 1.0
	case confInferred:
		return 0.6
	}
	return 0.2
}

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

func (p *proofs) add(x proof) { *p = append(*p, x) }

// roleset is a small set of role names (a handful per workload).
type roleset []string

func (s *roleset) add(v string) {
	if v == "" || s.has(v) {
		return
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

type strset map[string]struct{}

func (s *strset) add(v string) {
	if v == "" {
		return
	}
	if *s == nil {
		*s = strset{}
	}
	(*s)[v] = struct{}{}
}

func (s strset) sorted() []string {
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

type versionClaim struct {
	version string
	proof   proof
}

// runtimeHit is one detected engine, merged over the whole workload.
type runtimeHit struct {
	rule      *runtimeRule
	conf      string
	versions  []versionClaim
	backends  map[string]string // backend -> confidence (wrappers)
	wrappedBy strset
	roles     roleset
	proofs    proofs
	settings  map[string]strset
	models    strset // model keys that depend on this runtime
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
}

// containerHit is one distinct image.
type containerHit struct {
	key        string
	image      Image
	parsed     bool
	raw        string
	roles      roleset
	proofs     proofs
	simulator  string
	digests    strset
	containers strset
}

// detection is everything Render found in one Inputs.
type detection struct {
	runtimes   map[string]*runtimeHit
	models     map[string]*modelHit
	containers map[string]*containerHit
	roles      roleset
	simulators map[string]string // simulator -> engine it imitates
	noImage    []string          // locators of image-less containers
	workloadM  strset            // models with no runtime: the workload depends on them
	purpose    string
}

// compDetect gathers the claims of one component before they are merged.
type compDetect struct {
	roles    roleset
	hits     map[string]*runtimeHit // local hits, by runtime name
	backends map[string]map[string]string
	// engines suggested by engine-only flags, by engine name.
	engineFlags map[string]proof
	settings    map[string]strset
	models      strset
	images      strset
	// evidence for backends chosen by env, attached to the wrapper.
	backendProofs map[string][]proof
	// evidence naming an engine as a wrapper's backend, by engine.
	engineProofs map[string][]proof
}

func (c *compDetect) hit(rule *runtimeRule, conf string, p proof) *runtimeHit {
	h := c.hits[rule.Name]
	if h == nil {
		h = &runtimeHit{rule: rule, conf: conf}
		c.hits[rule.Name] = h
	}
	h.conf = stronger(h.conf, conf)
	h.proofs.add(p)
	return h
}

// backend records that wrapper runs engine, with the evidence p.
func (c *compDetect) backend(wrapper, engine string, p proof) {
	if c.backends[wrapper] == nil {
		c.backends[wrapper] = map[string]string{}
	}
	c.backends[wrapper][engine] = stronger(c.backends[wrapper][engine], p.conf)
	if c.engineProofs == nil {
		c.engineProofs = map[string][]proof{}
	}
	c.engineProofs[engine] = append(c.engineProofs[engine], p)
}

func (c *compDetect) setting(name, value string) {
	if value == "" || value == "REDACTED" || unresolvedRef(value) {
		return
	}
	vals := c.settings[name]
	vals.add(value)
	c.settings[name] = vals
}

func srcLocator(ct *schemas.Container, src int) string {
	if src < len(ct.Command) {
		return ct.Locator + ".command[" + strconv.Itoa(src) + "]"
	}
	return ct.Locator + ".args[" + strconv.Itoa(src-len(ct.Command)) + "]"
}

// detect runs the rules over in.
func (r *rules) detect(in *schemas.Inputs) *detection {
	d := &detection{
		runtimes:   map[string]*runtimeHit{},
		models:     map[string]*modelHit{},
		containers: map[string]*containerHit{},
		simulators: map[string]string{},
		purpose:    r.kindPurpose[in.Workload.Kind],
	}
	digests := digestIndex(in.Digests)

	// Workload-level claims: the kind and workload fields.
	wl := &compDetect{hits: map[string]*runtimeHit{}, backends: map[string]map[string]string{}, settings: map[string]strset{}}
	for _, rt := range r.runtimes {
		if conf, ok := rt.kinds[in.Workload.Kind]; ok {
			wl.hit(rt, conf, proof{conf: conf, value: "kind " + in.Workload.Kind, locator: "kind"})
		}
	}
	r.fieldClaims(wl, in.Fields, d)

	var comps []*compDetect
	for ci := range in.Components {
		c := &in.Components[ci]
		cd := &compDetect{hits: map[string]*runtimeHit{}, backends: map[string]map[string]string{}, settings: map[string]strset{}}
		for _, role := range c.Roles {
			cd.roles.add(role)
		}
		r.labelRoles(cd, c)
		for k := range c.Containers {
			r.container(cd, &c.Containers[k], d, digests)
		}
		r.fieldClaims(cd, c.Fields, d)
		comps = append(comps, cd)
	}
	// Roles are known once every container of the component has been read.
	var all roleset
	for _, cd := range comps {
		for _, role := range cd.roles {
			all.add(role)
		}
	}
	d.roles = all
	wl.roles = all
	r.resolveBackends(wl, nil)
	for _, cd := range comps {
		r.resolveBackends(cd, wl)
	}
	for _, cd := range append([]*compDetect{wl}, comps...) {
		d.merge(cd)
	}
	for key := range wl.models {
		if m := d.models[key]; m != nil {
			for _, role := range all {
				m.roles.add(role)
			}
		}
	}
	for _, cd := range comps {
		for key := range cd.images {
			if ch := d.containers[key]; ch != nil {
				for _, role := range cd.roles {
					ch.roles.add(role)
				}
			}
		}
		for key := range cd.models {
			if m := d.models[key]; m != nil {
				for _, role := range cd.roles {
					m.roles.add(role)
				}
			}
		}
	}
	if d.purpose == "cache" {
		d.runtimes = map[string]*runtimeHit{}
	}
	for key := range d.models {
		used := false
		for _, h := range d.runtimes {
			if _, ok := h.models[key]; ok {
				used = true
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

// container reads one container: image, invocations, env.
func (r *rules) container(cd *compDetect, ct *schemas.Container, d *detection, digests map[string][]string) {
	env := map[string]string{}
	for _, e := range ct.Env {
		if e.Value != "" && !e.Redacted && e.From == nil {
			env[e.Name] = e.Value
		}
	}
	simulator := ""
	imageHits := map[string]bool{}
	var img Image
	imgOK := false
	if ct.Image == "" {
		d.noImage = append(d.noImage, ct.Locator)
	} else {
		var err error
		img, err = ParseImage(ct.Image)
		imgOK = err == nil
		key := ct.Image
		if imgOK {
			key = img.String()
		}
		ch := d.containers[key]
		if ch == nil {
			ch = &containerHit{key: key, image: img, parsed: imgOK, raw: ct.Image}
			d.containers[key] = ch
		}
		ch.proofs.add(proof{conf: confDeclared, value: "image " + ct.Image, locator: ct.Locator + ".image"})
		ch.containers.add(ct.Name)
		for _, dg := range digests[ct.Image] {
			ch.digests.add(dg)
		}
		if imgOK {
			for _, dg := range digests[img.String()] {
				ch.digests.add(dg)
			}
			if img.Digest != "" {
				ch.digests.add(img.Digest)
			}
			info := r.cache.image(r, img.Name())
			if info.sim != nil {
				simulator = info.sim.Name
				ch.simulator = info.sim.Name
				d.simulators[info.sim.Name] = info.sim.Simulates
			} else {
				r.imageClaims(cd, ct, img, info, imageHits)
			}
			if info.nimModel != "" {
				r.addModel(cd, d, modelClaim{value: info.nimModel, conf: confInferred, how: "image", locator: ct.Locator + ".image"})
			}
		}
		// Container roles are added once the component's roles are final.
		cd.images.add(key)
	}

	invs := ParseArgsWith(ct.Command, ct.Args, ParseOptions{Env: env, Booleans: r.booleans})
	argsOnly := len(ct.Command) == 0
	for k, e := range ct.Env {
		if r.argsEnv[e.Name] && e.Value != "" && !e.Redacted {
			for _, words := range shellSplit(e.Value, env) {
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
	loc := func(src int) string {
		if src < 0 {
			return ct.Locator + ".env[" + strconv.Itoa(-1-src) + "]"
		}
		return srcLocator(ct, src)
	}

	var revision string
	var models []modelClaim
	for ii := range invs {
		inv := &invs[ii]
		if simulator == "" {
			r.commandClaims(cd, ct, inv, img, imgOK, imageHits, argsOnly && inv.Program == "" && ii == 0, loc, &models)
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
					how: "flag " + f.Name, locator: loc(f.ValueSrc)})
			}
			if r.revFlags[f.Name] && f.Value != "REDACTED" && !unresolvedRef(f.Value) {
				revision = f.Value
			}
			for _, rt := range r.backendFlags[f.Name] {
				if eng, ok := rt.BackendFlag.Values[strings.ToLower(f.Value)]; ok && eng != "" {
					cd.backend(rt.Name, eng, proof{conf: confDeclared, value: "flag " + f.Name + "=" + f.Value, locator: loc(f.Src)})
				} else if !ok && !unresolvedRef(f.Value) {
					cd.backend(rt.Name, strings.ToLower(f.Value), proof{conf: confDeclared, value: "flag " + f.Name + "=" + f.Value, locator: loc(f.Src)})
				}
			}
		}
		for _, f := range inv.Flags {
			for _, en := range r.engineFlagOwners[f.Name] {
				if cd.engineFlags == nil {
					cd.engineFlags = map[string]proof{}
				}
				if _, seen := cd.engineFlags[en]; !seen {
					cd.engineFlags[en] = proof{conf: confInferred, value: "engine flag " + f.Name, locator: loc(f.Src)}
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
					cd.hit(h.rule, confInferred, proof{conf: confInferred, value: "hint " + h.text, locator: loc(w.Src)})
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
		if r.revEnv[e.Name] && !unresolvedRef(e.Value) {
			revision = e.Value
		}
		if simulator == "" {
			for _, eb := range r.envRules[e.Name] {
				if envTruthy(e.Value) {
					p := proof{conf: confDeclared, value: "env " + e.Name + "=" + e.Value, locator: l}
					cd.backend(eb.runtime, eb.backend, p)
					cd.hitBackendProof(eb.runtime, p)
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
		r.addModel(cd, d, m)
	}
}

// hitBackendProof remembers evidence for a backend chosen before the wrapper is
// known; it is attached to the wrapper in resolveBackends.
func (c *compDetect) hitBackendProof(wrapper string, p proof) {
	if c.backendProofs == nil {
		c.backendProofs = map[string][]proof{}
	}
	c.backendProofs[wrapper] = append(c.backendProofs[wrapper], p)
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
func (r *rules) imageClaims(cd *compDetect, ct *schemas.Container, img Image, info *imageInfo, imageHits map[string]bool) {
	for _, m := range info.matches {
		rt := m.rule
		l := ct.Locator + ".image"
		h := cd.hit(rt, confInferred, proof{conf: confInferred, value: "image " + ct.Image, locator: l})
		imageHits[rt.Name] = true
		v := Version(img.Tag)
		how := "tag " + img.Tag
		if m.version != "" {
			v = m.version
			how = "repository " + img.Repository
		}
		if v != "" {
			h.versions = append(h.versions, versionClaim{version: v, proof: proof{conf: confInferred, value: how, locator: l}})
		}
		if m.backend != "" {
			cd.backend(rt.Name, m.backend, proof{conf: confInferred, value: "image " + ct.Image, locator: l})
		}
	}
}

// commandClaims matches one invocation against the launch commands, the
// args-only patterns (for the first invocation of an args-only container whose
// image is the engine's) and takes positional models.
func (r *rules) commandClaims(cd *compDetect, ct *schemas.Container, inv *Invocation, img Image, imgOK bool, imageHits map[string]bool, argsOnly bool, loc func(int) string, models *[]modelClaim) {
	head, src := invocationHead(inv)
	if head == "" {
		return
	}
	for _, hm := range r.cache.head(r, head, inv.Program == "") {
		rt, p, m := hm.rule, hm.pattern, hm.text
		if inv.Program == "" && (!argsOnly || !imageHits[rt.Name]) {
			continue
		}
		{
			h := cd.hit(rt, confDeclared, proof{conf: confDeclared, value: "command " + strings.TrimSpace(m), locator: loc(src)})
			if imgOK && imageHits[rt.Name] {
				if v := Version(img.Tag); v != "" {
					h.versions = append(h.versions, versionClaim{version: v, proof: proof{conf: confInferred, value: "tag " + img.Tag, locator: ct.Locator + ".image"}})
				}
			}
			if p.backend != "" {
				cd.backend(rt.Name, p.backend, proof{conf: confDeclared, value: "command " + strings.TrimSpace(m), locator: loc(src)})
			}
			for _, f := range inv.Flags {
				if f.HasValue && rt.modelFlags[f.Name] {
					*models = append(*models, modelClaim{value: f.Value, conf: confDeclared, how: "flag " + f.Name, locator: loc(f.ValueSrc)})
				}
			}
			if p.model {
				for _, w := range inv.Positionals {
					if rt.subcommands[w.Text] {
						continue
					}
					*models = append(*models, modelClaim{value: w.Text, conf: confDeclared, how: "positional", locator: loc(w.Src)})
					break
				}
			}
		}
	}
}

// invocationHead is the program and its first words joined by spaces, at most
// 512 bytes: launch patterns only look at the start.
func invocationHead(inv *Invocation) (string, int) {
	const maxHead, maxWords = 512, 8
	var b strings.Builder
	src := 0
	if inv.Program != "" {
		b.WriteString(inv.Program)
		src = inv.ProgramSrc
	} else if len(inv.Words) > 0 {
		src = inv.Words[0].Src
	}
	for i, w := range inv.Words {
		if i >= maxWords || b.Len() >= maxHead {
			break
		}
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
		for _, rt := range r.runtimes {
			for _, fm := range rt.fields {
				if fm.name != f.Name {
					continue
				}
				for _, re := range fm.res {
					if re.MatchString(f.Value) {
						p := proof{conf: confDeclared, value: "field " + f.Name + "=" + f.Value, locator: f.Locator}
						fieldHits = append(fieldHits, cd.hit(rt, confDeclared, p))
						// A wrapper's backendFramework names its engine.
						for _, w := range r.runtimes {
							if w.wraps[rt.Name] {
								cd.backend(w.Name, rt.Name, p)
							}
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
			r.addModel(cd, d, modelClaim{value: f.Value, conf: confDeclared, how: "field " + f.Name, locator: f.Locator})
		}
	}
	if version != nil {
		if v := Version(version.Value); v != "" {
			for _, h := range fieldHits {
				h.versions = append(h.versions, versionClaim{version: v, proof: proof{conf: confDeclared, value: "field runtimeVersion=" + version.Value, locator: version.Locator}})
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
	wrappers := map[string]*runtimeHit{}
	for name, h := range cd.hits {
		if len(h.rule.wraps) > 0 {
			wrappers[name] = h
		}
	}
	if wl != nil {
		for name, h := range wl.hits {
			if len(h.rule.wraps) > 0 && wrappers[name] == nil {
				// The kind's wrapper also runs here: give it a local hit so the
				// component's roles, backends and settings reach it.
				lh := &runtimeHit{rule: h.rule, conf: h.conf}
				cd.hits[name] = lh
				wrappers[name] = lh
			}
		}
	}
	names := make([]string, 0, len(wrappers))
	for n := range wrappers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, wn := range names {
		w := wrappers[wn]
		if w.backends == nil {
			w.backends = map[string]string{}
		}
		chosen := false
		for _, p := range cd.backendProofs[wn] {
			w.proofs.add(p)
		}
		bs := cd.backends[wn]
		keys := make([]string, 0, len(bs))
		for k := range bs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, eng := range keys {
			conf := bs[eng]
			chosen = true
			w.backends[eng] = stronger(w.backends[eng], conf)
			if er := r.byName[eng]; er == nil || !w.rule.wraps[eng] {
				// A backend that is no engine of ours (huggingface): evidence on the wrapper.
				for _, p := range cd.engineProofs[eng] {
					w.proofs.add(p)
				}
			} else {
				eh := cd.hits[eng]
				if eh == nil {
					eh = &runtimeHit{rule: er, conf: conf}
					cd.hits[eng] = eh
				}
				eh.conf = stronger(eh.conf, conf)
				for _, p := range cd.engineProofs[eng] {
					eh.proofs.add(p)
				}
				eh.wrappedBy.add(wn)
			}
		}
		// Engines found beside the wrapper in this component.
		for en, eh := range cd.hits {
			if w.rule.wraps[en] {
				eh.wrappedBy.add(wn)
				w.backends[en] = stronger(w.backends[en], eh.conf)
				chosen = true
			}
		}
		if chosen {
			continue
		}
		engs := make([]string, 0, len(cd.engineFlags))
		for en := range cd.engineFlags {
			engs = append(engs, en)
		}
		sort.Strings(engs)
		for _, en := range engs {
			if w.rule.wraps[en] {
				eh := cd.hit(r.byName[en], confInferred, cd.engineFlags[en])
				eh.wrappedBy.add(wn)
				w.backends[en] = stronger(w.backends[en], confInferred)
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
			w.backends[def.Backend] = stronger(w.backends[def.Backend], confInferred)
		}
	}
	// Settings and models belong to the engine that runs: the engines when
	// there are any, else the wrappers.
	var primary []*runtimeHit
	for _, h := range cd.hits {
		if len(h.rule.wraps) == 0 {
			primary = append(primary, h)
		}
	}
	if len(primary) == 0 {
		for _, h := range cd.hits {
			primary = append(primary, h)
		}
	}
	for _, h := range primary {
		for name, vals := range cd.settings {
			if h.settings == nil {
				h.settings = map[string]strset{}
			}
			for v := range vals {
				s := h.settings[name]
				s.add(v)
				h.settings[name] = s
			}
		}
		for m := range cd.models {
			h.models.add(m)
		}
	}
	for _, h := range cd.hits {
		for _, role := range cd.roles {
			h.roles.add(role)
		}
	}
}

// merge folds one component's hits into the workload's.
func (d *detection) merge(cd *compDetect) {
	for name, h := range cd.hits {
		g := d.runtimes[name]
		if g == nil {
			g = &runtimeHit{rule: h.rule, conf: h.conf}
			d.runtimes[name] = g
		}
		g.conf = stronger(g.conf, h.conf)
		g.versions = append(g.versions, h.versions...)
		for _, p := range h.proofs {
			g.proofs.add(p)
		}
		for b, c := range h.backends {
			if g.backends == nil {
				g.backends = map[string]string{}
			}
			g.backends[b] = stronger(g.backends[b], c)
		}
		for w := range h.wrappedBy {
			g.wrappedBy.add(w)
		}
		for _, role := range h.roles {
			g.roles.add(role)
		}
		for m := range h.models {
			g.models.add(m)
		}
		for n, vals := range h.settings {
			if g.settings == nil {
				g.settings = map[string]strset{}
			}
			s := g.settings[n]
			for v := range vals {
				s.add(v)
			}
			g.settings[n] = s
		}
	}
}

// bestVersion picks the version with the strongest evidence, then the smallest.
func (h *runtimeHit) bestVersion() (versionClaim, []string) {
	var best versionClaim
	others := strset{}
	for _, v := range h.versions {
		others.add(v.version)
		if best.version == "" || confRank(v.proof.conf) > confRank(best.proof.conf) ||
			confRank(v.proof.conf) == confRank(best.proof.conf) && (v.version < best.version || v.version == best.version && v.proof.locator < best.proof.locator) {
			best = v
		}
	}
	delete(others, best.version)
	return best, others.sorted()
}

func digestIndex(ds []schemas.ImageDigest) map[string][]string {
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
		if img, err := ParseImage(d.Image); err == nil && img.String() != d.Image {
			m[img.String()] = append(m[img.String()], dg)
		}
	}
	return m
}
