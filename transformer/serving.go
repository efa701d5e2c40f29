package transformer

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/imageref"
)

// Whether a container serves a model, decided from evidence.
//
// Each container is a unit: every signal found for or against its serving
// (an engine's launch command or image, an engine's word inside a custom
// image name, an engine's env family, a model it names, an accelerator, a
// port, a model server's probe; sleeping, acting as a client or benchmark,
// downloading, converting, training, running to completion) is recorded
// with its weight (rules serving.weights), its value and its locator. The
// unit serves when the weights add up to the threshold. Only a serving
// unit's engine claims reach the BOM; when none of them names an engine,
// the engine its weaker signals point at (an image word, an env family, a
// label, an engine-only flag) is claimed, inferred. A workload serves when
// one of its units does, or its kind or a kind field names an engine, or
// its kind serves by construction (serving.kinds).

// signal is one piece of evidence for or against a container's serving:
// what was seen (what and text, "command" "vllm serve") and where (loc
// and locSuffix), kept in parts: most renders never print them.
type signal struct {
	name           string
	weight         float64
	what, text     string
	loc, locSuffix string
	engine         *runtimeRule // the engine it names, if any
	version        string       // the engine's version it carries (an image word's)
}

// value is what was seen.
func (s *signal) value() string {
	switch {
	case s.text == "":
		return s.what
	case s.what == "":
		return s.text
	}
	return s.what + " " + s.text
}

// locator is where it was seen.
func (s *signal) locator() string { return s.loc + s.locSuffix }

// unit is one container, judged: its signals are d.sigs[from:to].
type unit struct {
	name, locator string
	from, to      int
	score         float64
	serving       bool
}

// signal records evidence name about the container, once per name (the
// first one found is kept), in the detection's signals.
func (x *ctrScope) signal(s *servingRules, name, what, text, loc, locSuffix string, engine *runtimeRule) *signal {
	sigs := &x.d.sigs
	for i := x.sigFrom; i < len(*sigs); i++ {
		if (*sigs)[i].name == name {
			return nil
		}
	}
	*sigs = append(*sigs, signal{name: name, weight: s.weight(name), what: what, text: text, loc: loc, locSuffix: locSuffix, engine: engine})
	return &(*sigs)[len(*sigs)-1]
}

// sigs are the container's signals so far.
func (x *ctrScope) sigs() []signal { return x.d.sigs[x.sigFrom:] }

// judge adds up the container's signals.
func (r *rules) judge(x *ctrScope) unit {
	u := unit{name: x.ct.Name, locator: x.ct.Locator, from: x.sigFrom, to: len(x.d.sigs)}
	for _, s := range x.sigs() {
		u.score += s.weight
	}
	u.serving = u.score >= r.serving.threshold
	return u
}

// signals are the unit's signals in d.
func (d *detection) signals(u *unit) []signal { return d.sigs[u.from:u.to] }

// servingSignals records the signals of the container that the claims
// did not: the engine words of its image, its env families, its labels,
// engine-only flags, models, accelerators, ports and probes, and the
// signals against serving.
func (r *rules) servingSignals(x *ctrScope, infos []*invInfo, c *schemas.Component, d *detection) {
	s, ct, kind := r.serving, x.ct, d.kind
	if d.declared != "" {
		x.signal(s, sigKind, d.declared, "", "kind", "", nil)
	} else if f := r.fieldNamingEngine(c.Fields); f != nil {
		x.signal(s, sigKind, "field", f.Name+"="+f.Value, f.Locator, "", nil)
	}
	if ct.Init && !ct.Sidecar {
		x.signal(s, sigInit, "init container", "", ct.Locator, "", nil)
	}
	if s.oneShot[kind] {
		x.signal(s, sigOneShot, "kind", kind, "kind", "", nil)
	}
	r.imageWordSignal(x)
	r.envFamilySignal(x)
	if len(c.Labels) > 0 {
		for _, key := range s.labels {
			if v, ok := c.Labels[key]; ok {
				if rt := r.engineNamed(v); rt != nil {
					x.signal(s, sigLabel, "label", key+"="+v, c.Locator, ".labels", rt)
				}
			}
		}
	}
	if rt := r.engineNamedContainer(ct.Name); rt != nil {
		x.signal(s, sigName, "container name", ct.Name, ct.Locator, ".name", rt)
	}
	if len(x.cd.engineFlags) > 0 {
		ef := x.cd.engineFlags[0]
		x.signal(s, sigEngineFlag, ef.p.value, "", ef.p.locator, "", r.byName[ef.name])
	}
	for _, pc := range x.cd.pending {
		if !pc.claim.weak {
			x.signal(s, sigModel, pc.claim.how, pc.claim.value, pc.claim.locator, "", nil)
			break
		}
	}
	for _, a := range ct.Accelerators {
		if matchAny(s.accels, strings.ToLower(a)) {
			x.signal(s, sigAccelerator, "accelerator", a, ct.Locator, ".resources", nil)
			break
		}
	}
	if len(ct.Ports) > 0 {
		x.signal(s, sigPort, "port", portText(ct.Ports[0]), ct.Locator, ".ports[0]", nil)
	}
	for _, p := range ct.Probes {
		switch {
		case matchAny(s.probes, p.Path):
			x.signal(s, sigProbe, "probe", p.Path, ct.Locator, "."+p.Kind+"Probe", nil)
		case matchAny(s.health, p.Path):
			x.signal(s, sigHealthProbe, "probe", p.Path, ct.Locator, "."+p.Kind+"Probe", nil)
		}
	}
	r.commandSignals(x, infos)
}

// fieldNamingEngine is the first of fields that a runtime's field rule
// matches, or nil.
func (r *rules) fieldNamingEngine(fields []schemas.Field) *schemas.Field {
	for i := range fields {
		f := &fields[i]
		for _, rt := range r.fieldRules[f.Name] {
			for _, fm := range rt.fields {
				if fm.name == f.Name && matchAny(fm.res, f.Value) {
					return f
				}
			}
		}
	}
	return nil
}

// programKind is the signal of the program a command head runs: idle,
// client, server, convert, training, or "".
func (s *servingRules) programKind(head string) string {
	for _, k := range s.heads {
		if (k.lit == "" || strings.Contains(head, k.lit)) && k.re.MatchString(head) {
			return k.name
		}
	}
	return ""
}

// commandSignals records what the container's programs say of its
// serving: sleeping, a client or benchmark, a server of no engine in
// particular, a download, a conversion, training.
func (r *rules) commandSignals(x *ctrScope, infos []*invInfo) {
	s := r.serving
	if x.client {
		x.signal(s, sigClient, "a client of a server elsewhere", "", x.ct.Locator, "", nil)
	}
	var buf [256]byte
	for ii := range x.invs {
		inv := &x.invs[ii]
		kind := infos[ii].kind
		if kind == "" || kind == sigIdle && inv.Background || x.d.hasSignalFrom(x.sigFrom, kind) {
			continue
		}
		src := inv.ProgramSrc
		if inv.Program == "" {
			if ii > 0 || len(inv.Words) == 0 {
				continue
			}
			src = inv.Words[0].Src // args to the image's entrypoint
		}
		x.signal(s, kind, "command", string(appendHead(buf[:0], inv, 8)), x.loc(src), "", nil)
	}
	for _, dl := range x.cd.downloads {
		if dl.ct == x.ct {
			x.signal(s, sigDownload, dl.claim.how, dl.claim.value, dl.claim.locator, "", nil)
			break
		}
	}
	// A one-shot script that starts the engine in the background only
	// uses it for its foreground work (serve &; pull; exit).
	if hasSignal(x.sigs(), sigOneShot) && hasSignal(x.sigs(), sigLaunchBg) && !hasSignal(x.sigs(), sigLaunch) {
		x.signal(s, sigHelper, "the engine runs in the background of a script that ends", "", x.ct.Locator, "", nil)
	}
	// An idle command after a launch in the same script keeps the
	// container alive for the server: it is not idle.
	if hasSignal(x.sigs(), sigIdle) && (hasSignal(x.sigs(), sigLaunch) || hasSignal(x.sigs(), sigLaunchBg)) {
		x.d.sigs = append(x.d.sigs[:x.sigFrom], dropSignal(x.sigs(), sigIdle)...)
	}
}

// imageWordSignal: an engine's word inside the image's name or tag, when
// no image pattern matched it.
func (r *rules) imageWordSignal(x *ctrScope) {
	if x.ct.Image == "" || len(x.matches) > 0 || x.simulator != "" {
		return
	}
	var w *engineWord
	version := ""
	if x.img != nil {
		w, version = x.img.word, x.img.wordVersion
	} else {
		// A reference that does not parse, as written with placeholders
		// (REGION-docker.pkg.dev/PROJECT_ID/optimum-tpu/tgi-tpu:latest):
		// its last part and tag still name what it runs.
		hit := r.memo.rawWords.get(x.ct.Image, r.rawImageWord)
		w, version = hit.w, hit.version
	}
	if w == nil {
		return
	}
	if sg := x.signal(r.serving, sigImageWord, "image", x.ct.Image, x.imageLoc, "", w.rule); sg != nil {
		sg.version = version
	}
}

// wordHit is an engine word found in an image, and the version it gives.
type wordHit struct {
	w       *engineWord
	version string
}

// rawImageWord is imageWord of an image reference that does not parse.
func (r *rules) rawImageWord(ref string) wordHit {
	repo, tag, tagVersion := ref, "", ""
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo, tag = repo[:i], repo[i+1:]
		tagVersion, _ = imageref.ParseVersion(tag)
	}
	w, v := r.imageWord(repo, tag, tagVersion)
	return wordHit{w: w, version: v}
}

// imageWord finds the first engine word in an image: in the last part of
// its repository (the organisation's path names who built it, not what
// it runs: vllm-project/semantic-router/extproc is no vLLM), with a
// version attached (neuron-sdk2.20-vllm0.5.0) or else the tag's; else in
// the tag.
func (r *rules) imageWord(repo, tag, tagVersion string) (*engineWord, string) {
	repo = strings.ToLower(repo)
	name := repo[strings.LastIndexByte(repo, '/')+1:]
	if r.serving.notEngine != nil && r.serving.notEngine.MatchString(name) {
		return nil, ""
	}
	for i := range r.serving.words {
		w := &r.serving.words[i]
		if m := w.re.FindStringSubmatchIndex(name); m != nil {
			v := tagVersion
			if vi := w.re.SubexpIndex("version"); m[2*vi] >= 0 {
				v = imageref.Version(strings.TrimPrefix(name[m[2*vi]:m[2*vi+1]], "v"))
			}
			return w, v
		}
	}
	tag = strings.ToLower(tag)
	for i := range r.serving.words {
		w := &r.serving.words[i]
		if m := w.re.FindStringSubmatchIndex(tag); m != nil {
			v := ""
			if vi := w.re.SubexpIndex("version"); m[2*vi] >= 0 {
				v = imageref.Version(strings.TrimPrefix(tag[m[2*vi]:m[2*vi+1]], "v"))
			}
			return w, v
		}
	}
	return nil, ""
}

// envFamilySignal: the container sets variables of an engine's family.
func (r *rules) envFamilySignal(x *ctrScope) {
	for k, e := range x.ct.Env {
		if r.clientEnvName(e.Name) {
			continue
		}
		if rt := r.envFamily(e.Name); rt != nil {
			x.signal(r.serving, sigEnvFamily, "env", e.Name, x.loc(-1-k), "", rt)
			return
		}
	}
	for _, src := range x.ct.EnvFrom {
		for _, e := range src.Env {
			if rt := r.envFamily(e.Name); rt != nil && !r.clientEnvName(e.Name) {
				x.signal(r.serving, sigEnvFamily, "env", e.Name+" from "+src.Kind+" "+src.Name, x.ct.Locator, ".envFrom", rt)
				return
			}
		}
	}
}

// envFamily is the engine whose env family name belongs to, or nil,
// remembered by the Renderer.
func (r *rules) envFamily(name string) *runtimeRule {
	return r.memo.envFamilies.get(name, func(n string) *runtimeRule {
		for _, f := range r.serving.families {
			if f.re.MatchString(n) {
				return f.rule
			}
		}
		return nil
	})
}

// engineNamed is the runtime a label value names: its name or one of its
// words.
func (r *rules) engineNamed(v string) *runtimeRule {
	return r.memo.engines.get(v, r.matchEngineName)
}

// matchEngineName is engineNamed, not remembered.
func (r *rules) matchEngineName(v string) *runtimeRule {
	v = strings.ToLower(strings.TrimSpace(v))
	if rt := r.byName[v]; rt != nil {
		return rt
	}
	for _, w := range r.serving.words {
		if m := w.re.FindStringIndex(v); m != nil && m[0] == 0 && m[1] == len(v) {
			return w.rule
		}
	}
	return nil
}

// engineNamedContainer is the engine a container is named after (vllm,
// tgi-server, sglang-leader): the whole name, or its first part when the
// rest names no router, gateway, client or other tool beside an engine.
func (r *rules) engineNamedContainer(name string) *runtimeRule {
	if name == "" {
		return nil
	}
	return r.memo.ctrNames.get(name, r.matchContainerName)
}

// matchContainerName is engineNamedContainer, not remembered.
func (r *rules) matchContainerName(name string) *runtimeRule {
	if rt := r.engineNamed(name); rt != nil {
		return rt
	}
	head, _, ok := strings.Cut(name, "-")
	if !ok || r.serving.notEngine != nil && r.serving.notEngine.MatchString(strings.ToLower(name)) {
		return nil
	}
	return r.engineNamed(head)
}

// engineFromSignals claims, for a serving unit whose claims name no
// engine (nor a wrapper of one), the engine its signals point at (an image word, an env family,
// a label, an engine-only flag), inferred.
func (r *rules) engineFromSignals(cd *compDetect, sigs []signal) {
	if len(cd.hits) > 0 {
		return
	}
	for _, name := range []string{sigImageWord, sigEnvFamily, sigLabel, sigEngineFlag, sigName} {
		for _, s := range sigs {
			if s.name != name || s.engine == nil {
				continue
			}
			p := proof{conf: confInferred, value: s.value(), locator: s.locator()}
			h := cd.hit(s.engine, confInferred, p)
			if s.version != "" {
				h.versions = append(h.versions, versionClaim{version: s.version, proof: p})
			}
			return
		}
	}
}

// fieldUnit judges a workload of no container at all (a CR whose operator
// makes the pods: a claim naming a model and a GPU) by its kind fields:
// the models they name and the accelerators they ask for.
func (r *rules) fieldUnit(d *detection, fields []schemas.Field) {
	if len(d.units) > 0 {
		return
	}
	s, from := r.serving, len(d.sigs)
	add := func(name, what, text, loc string) {
		d.sigs = append(d.sigs, signal{name: name, weight: s.weight(name), what: what, text: text, loc: loc})
	}
	for _, me := range d.models.entries {
		if p := me.item.proofs; len(p) > 0 {
			add(sigModel, p[0].value, "", p[0].locator)
			break
		}
	}
	for i := range fields {
		if f := &fields[i]; s.acceleratorFields[f.Name] {
			add(sigAccelerator, "field "+f.Name, f.Value, f.Locator)
			break
		}
	}
	if len(d.sigs) == from {
		return
	}
	u := unit{name: "(kind fields)", locator: "spec", from: from, to: len(d.sigs)}
	for _, sg := range d.sigs[from:] {
		u.score += sg.weight
	}
	u.serving = u.score >= s.threshold
	d.units = append(d.units, u)
}

// strongSignals name an engine for sure: a workload that serves on one
// of them needs no account of its serving in its BOM.
var strongSignals = []string{sigLaunch, sigLaunchBg, sigEntrypoint, sigKind, sigImage}

// weakEvidence is, for a serving workload none of whose serving units
// has a strong signal and none of whose runtimes is declared, the signals
// of its serving units, as properties give them; else nil.
func weakEvidence(d *detection) []string {
	if d.declared != "" {
		return nil
	}
	for _, re := range d.runtimes.entries {
		if re.item.conf == confDeclared {
			return nil
		}
	}
	for i := range d.units {
		if !d.units[i].serving {
			continue
		}
		for _, s := range d.signals(&d.units[i]) {
			if slices.Contains(strongSignals, s.name) {
				return nil
			}
		}
	}
	var out []string
	for i := range d.units {
		if !d.units[i].serving {
			continue
		}
		for _, s := range d.signals(&d.units[i]) {
			out = append(out, s.name+" "+strconv.FormatFloat(s.weight, 'f', -1, 64)+": "+s.value()+" @ "+s.locator())
		}
	}
	return out
}

// scratchComp is the detection's compDetect for the claims of one
// container, emptied: absorb copies what it keeps out of it, or takes its
// lists whole for a component that has none yet (take), so one serves every
// container of a render. Its roles start in its roleRoom, which absorb
// copies from; its models are given up rather than emptied, since absorb
// may take them whole (strset.addAll).
func (d *detection) scratchComp() *compDetect {
	c := &d.room.scratch
	*c = compDetect{roles: c.roleRoom[:0], hits: c.hits[:0], backends: c.backends[:0], engineFlags: c.engineFlags[:0], settings: c.settings[:0],
		backendProofs: c.backendProofs[:0], engineProofs: c.engineProofs[:0], pending: c.pending[:0], downloads: c.downloads[:0]}
	return c
}

// absorb folds the claims of one container (sub) into its component's:
// its roles, model claims and downloads always, its engine claims only
// when it serves.
func (c *compDetect) absorb(sub *compDetect, serving bool) {
	if cap(c.roles) == 0 && len(sub.roles) <= len(c.roleRoom) {
		c.roles = append(c.roleRoom[:0], sub.roles...)
	} else {
		c.roles.addAll(sub.roles)
	}
	take(&c.pending, &sub.pending)
	take(&c.downloads, &sub.downloads)
	c.models.addAll(&sub.models)
	if !serving {
		return
	}
	if len(c.hits) == 0 && len(c.backends) == 0 {
		// Within one container, hits and backends are already one per
		// runtime and per pair.
		take(&c.hits, &sub.hits)
		take(&c.backends, &sub.backends)
	}
	for _, h := range sub.hits {
		g := c.hitOf(h.rule.Name)
		if g == nil {
			if c.hits == nil {
				c.hits = make([]*runtimeHit, 0, 4)
			}
			c.hits = append(c.hits, h)
			continue
		}
		g.conf = stronger(g.conf, h.conf)
		g.versions = append(g.versions, h.versions...)
		g.proofs = append(g.proofs, h.proofs...)
		g.wrappedBy.addAll(&h.wrappedBy)
	}
	for _, b := range sub.backends {
		found := false
		for i := range c.backends {
			if cb := &c.backends[i]; cb.wrapper == b.wrapper && cb.engine == b.engine {
				cb.conf, found = stronger(cb.conf, b.conf), true
			}
		}
		if !found {
			c.backends = append(c.backends, b)
		}
	}
	take(&c.engineFlags, &sub.engineFlags)
	take(&c.settings, &sub.settings)
	take(&c.backendProofs, &sub.backendProofs)
	take(&c.engineProofs, &sub.engineProofs)
}

// take appends *from to *to. When *to has no array of its own yet it takes
// from's, and from is left with none (the scratch then allocates for its
// next container what the component would otherwise have copied into).
func take[T any](to, from *[]T) {
	if cap(*to) == 0 {
		*to, *from = *from, nil
		return
	}
	*to = append(*to, *from...)
}

// matchAny reports whether one of res matches s.
func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// portText is a port as written: its number, and its name.
func portText(p schemas.Port) string {
	s := strconv.Itoa(int(p.Port))
	if p.Name != "" {
		s += " (" + p.Name + ")"
	}
	return s
}

// hasSignalFrom reports whether d's signals from from on hold name.
func (d *detection) hasSignalFrom(from int, name string) bool { return hasSignal(d.sigs[from:], name) }

func hasSignal(ss []signal, name string) bool {
	for _, s := range ss {
		if s.name == name {
			return true
		}
	}
	return false
}

func dropSignal(ss []signal, name string) []signal {
	out := ss[:0]
	for _, s := range ss {
		if s.name != name {
			out = append(out, s)
		}
	}
	return out
}
