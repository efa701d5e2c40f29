package transformer

import (
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
	"github.com/bomstream/bomstream/schemas/imageref"
)

// ctrScope is one container being read: what its claims share and the
// model claims gathered from it.
type ctrScope struct {
	ct       *schemas.Container
	env      map[string]string    // the literal env values
	invs     []cmdline.Invocation // the programs it runs
	client   bool                 // it talks to a server elsewhere (see isClient)
	img      *parsedImage         // nil when the image is missing or unparsed
	imageLoc string               // ct.Locator + ".image"
	// simulator names the engine simulator the image is, if it is one.
	simulator string
	// matches are the runtimes the image matched.
	matches []imageMatch
	// cd is the component: the model claims of the container go to
	// cd.pending, from index claims on; revision is the one a flag or env
	// pins them to.
	cd       *compDetect
	claims   int
	revision string
	// locs holds the locators of the first elements of command and args.
	locs [8]string
	// d is the detection the container's signals go to, from sigFrom on.
	d       *detection
	sigFrom int
	// envs are its env variables whose values are known.
	envs []envValue
}

// container reads one container, one step per kind of rule: its image, then
// for each program it runs the launch commands, flags and words, then its
// env; the model claims it makes wait in cd.pending for the component's
// other containers, and so do its downloads.
//
// The container's claims are gathered apart (sub) and judged (serving.go):
// its engine claims reach the component only when it serves.
func (r *rules) container(cd *compDetect, c *schemas.Component, ct *schemas.Container, d *detection, digests map[string][]string) {
	sub := d.scratchComp()
	x := ctrScope{cd: sub, d: d, sigFrom: len(d.sigs)}
	r.containerClaims(sub, &x, c, ct, d, digests)
	u := r.judge(&x)
	if u.serving && x.simulator == "" {
		r.engineFromSignals(sub, d.signals(&u))
	}
	if u.serving && x.revision != "" && len(sub.pending) == 0 {
		// A serving engine pinned to a revision whose model a kind field
		// names (a KubeAI Model's args: [--revision=...]).
		d.argRevision.add(x.revision)
	}
	d.units = append(d.units, u)
	cd.absorb(sub, u.serving)
}

// containerClaims gathers the claims of one container and the signals of
// its serving into cd and x.
func (r *rules) containerClaims(cd *compDetect, x *ctrScope, c *schemas.Component, ct *schemas.Container, d *detection, digests map[string][]string) {
	r.readContainer(x, ct)
	// What the rules say of the head of each of x.invs.
	var arr [4]*invInfo
	infos := arr[:0]
	for ii := range x.invs {
		infos = append(infos, r.invocationInfo(&x.invs[ii]))
	}
	x.client = r.isClient(ct, x.invs, infos)
	r.imageStep(cd, x, d, digests)
	for ii := range x.invs {
		r.invocationClaims(cd, x, ii, infos[ii])
	}
	r.envClaims(cd, x)
	for i := x.claims; i < len(cd.pending); i++ {
		m := &cd.pending[i].claim
		if x.revision != "" {
			m.revision = x.revision
		}
		if x.simulator != "" {
			m.simulated = x.simulator
		}
		// A client's models are a server's elsewhere.
		m.weak = m.weak || x.client
	}
	cd.downloads = r.findDownloads(cd.downloads, ct, x, x.invs, infos)
	r.servingSignals(x, infos, c, d)
}

// envValue is one env variable of a container whose value is known: a
// literal, or one a ConfigMap gives (valueFrom.configMapKeyRef, envFrom).
type envValue struct {
	name, value string
	// src is the Src of an env element (-1-k) for a manifest's env; loc
	// names the ConfigMap key for a ConfigMap's.
	src int
	loc string
}

// containerEnv is the env of ct whose values are known, as Kubernetes
// resolves it: the ConfigMaps of envFrom in order (a later one wins),
// then env, which wins over them. Secrets' values are never known.
func containerEnv(ct *schemas.Container) []envValue {
	var out []envValue
	set := func(v envValue) {
		for i := range out {
			if out[i].name == v.name {
				out[i] = v
				return
			}
		}
		out = append(out, v)
	}
	for _, src := range ct.EnvFrom {
		for _, e := range src.Env {
			if e.Value != "" && !e.Redacted && e.From != nil && e.From.Kind == "configMap" {
				set(envValue{name: e.Name, value: e.Value, loc: configMapLoc(e.From)})
			}
		}
	}
	for k, e := range ct.Env {
		switch {
		case e.Value == "" || e.Redacted:
		case e.From == nil:
			set(envValue{name: e.Name, value: e.Value, src: -1 - k})
		case e.From.Kind == "configMap":
			set(envValue{name: e.Name, value: e.Value, loc: configMapLoc(e.From)})
		}
	}
	return out
}

// configMapLoc is the locator of a ConfigMap key as the collector writes
// those of what a ConfigMap contributes: ConfigMap/<name>:data.<key>, or
// ConfigMap/<name>:data["<key>"] for a key of other characters than
// letters, digits, "_" and "-".
func configMapLoc(k *schemas.KeyRef) string {
	plain := k.Key != ""
	for _, c := range k.Key {
		plain = plain && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')
	}
	if !plain {
		return "ConfigMap/" + k.Name + ":data[" + strconv.Quote(k.Key) + "]"
	}
	return "ConfigMap/" + k.Name + ":data." + k.Key
}

// envLoc is the locator of e's value.
func (c *ctrScope) envLoc(e envValue) string {
	if e.loc != "" {
		return e.loc
	}
	return c.loc(e.src)
}

// fileSrc is the Src of the words of the script ct.Files[0]; those of
// Files[i] are fileSrc-i. Env values are -1-k, command and args from 0.
const fileSrc = -1 << 30

// scriptFiles appends to invs the commands of the start scripts a
// ConfigMap puts in the container that one of invs runs (command:
// [/scripts/start.sh], or sh /scripts/start.sh), as if they stood in the
// manifest; their words' locators name the ConfigMap key.
func (r *rules) scriptFiles(ct *schemas.Container, invs []cmdline.Invocation, env map[string]string) []cmdline.Invocation {
	if len(ct.Files) == 0 {
		return invs
	}
	n := len(invs)
	for ii := range n {
		inv := &invs[ii]
		path := inv.Program
		if path == "" && len(inv.Words) > 0 {
			path = inv.Words[0].Text
		} else if cmdline.IsShell(path) && len(inv.Positionals) > 0 {
			path = inv.Positionals[0].Text
		}
		for i := range ct.Files {
			f := &ct.Files[i]
			if f.Kind != schemas.FileScript || f.Path != path || f.Text == "" {
				continue
			}
			src := fileSrc - i
			opt := cmdline.ParseOptions{Env: env, Booleans: r.booleans, Scripts: r.shellOf}
			invs = append(invs, cmdline.ParseScriptFile(cmdline.Word{Text: f.Text, Src: src}, opt)...)
		}
	}
	return invs
}

// configFiles gives each of invs that names a configuration file a
// ConfigMap puts in the container (vllm serve --config FILE) the file's
// keys as flags of the same name (model: org/m is --model org/m), read
// from the file's key=value lines; their locators name the ConfigMap key.
func configFiles(ct *schemas.Container, invs []cmdline.Invocation) {
	if len(ct.Files) == 0 {
		return
	}
	for ii := range invs {
		inv := &invs[ii]
		for _, f := range inv.Flags {
			if !f.HasValue {
				continue
			}
			for i := range ct.Files {
				cf := &ct.Files[i]
				if cf.Kind != schemas.FileConfig || cf.Path != f.Value {
					continue
				}
				src := fileSrc - i
				for line := range strings.SplitSeq(cf.Text, "\n") {
					k, v, ok := strings.Cut(line, "=")
					if !ok || k == "" || v == "" || strings.ContainsAny(k, ".[ ") {
						continue // nested keys are no flags
					}
					inv.Flags = append(inv.Flags, cmdline.Flag{Name: "--" + k, Value: v, HasValue: true, Src: src, ValueSrc: src})
				}
			}
		}
	}
}

// readContainer reads into x what ct runs: its command and args, and the
// env vars read as arguments (rules argsEnv).
func (r *rules) readContainer(x *ctrScope, ct *schemas.Container) {
	x.ct, x.imageLoc = ct, ct.Locator+".image"
	x.envs = containerEnv(ct)
	for _, e := range x.envs {
		if x.env == nil {
			x.env = make(map[string]string, len(x.envs))
		}
		x.env[e.name] = e.value
	}
	x.invs = cmdline.ParseArgsWith(ct.Command, ct.Args, cmdline.ParseOptions{Env: x.env, Booleans: r.booleans, Scripts: r.shellOf})
	x.invs = r.scriptFiles(ct, x.invs, x.env)
	configFiles(ct, x.invs)
	for k, e := range ct.Env {
		if !r.argsEnv[e.Name] || e.Value == "" || e.Redacted {
			continue
		}
		for _, words := range r.shell(e.Value).Commands(x.env) {
			ws := make([]cmdline.Word, len(words))
			for i, w := range words {
				ws[i] = cmdline.Word{Text: w, Src: -1 - k}
			}
			x.invs = append(x.invs, cmdline.ParseWords(ws, r.booleans))
		}
	}
}

// invocationClaims reads one program the container runs (x.invs[ii], whose
// head the rules say info of): its launch command, the flags that name a
// model only for the engine of the image's entrypoint, its flags and its
// words.
func (r *rules) invocationClaims(cd *compDetect, x *ctrScope, ii int, info *invInfo) {
	inv := &x.invs[ii]
	// The container's args given to the image's entrypoint.
	entry := len(x.ct.Command) == 0 && inv.Program == "" && ii == 0
	if x.simulator == "" && !x.client {
		r.commandClaims(cd, x, inv, info, entry)
	}
	if entry {
		x.entrypointFlagClaims(inv)
	}
	r.flagClaims(cd, x, inv)
	r.engineFlagClaims(cd, x, inv)
	r.wordClaims(cd, x, inv)
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
			if v := imageref.Version(sm[m.tagRE.SubexpIndex("version")]); v != "" {
				return v, "", c.img.tagHow
			}
		}
		return "", "", ""
	}
	return c.img.tagVersion, c.img.tagVariant, c.img.tagHow
}

// imageVersionClaim gives h the version the image says of the engine of
// m, inferred, if it says one.
func (c *ctrScope) imageVersionClaim(h *runtimeHit, m imageMatch) {
	if v, variant, how := c.imageVersion(m); v != "" {
		h.versions = append(h.versions, versionClaim{version: v, variant: variant, proof: proof{conf: confInferred, value: how, locator: c.imageLoc}})
	}
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

// imageHit reports whether the image matched the runtime named name.
func (c *ctrScope) imageHit(name string) bool {
	_, ok := c.matchOf(name)
	return ok
}

// loc is the locator of the command, args or env element src.
func (c *ctrScope) loc(src int) string {
	switch {
	case src <= fileSrc:
		return c.ct.Files[fileSrc-src].Locator
	case src < 0:
		return c.ct.Locator + ".env[" + strconv.Itoa(-1-src) + "]"
	case src < len(c.locs):
		if c.locs[src] == "" {
			c.locs[src] = srcLocator(c.ct, src)
		}
		return c.locs[src]
	}
	return srcLocator(c.ct, src)
}

// claim records a model claim of the container, in the component's
// pending claims.
func (c *ctrScope) claim(m modelClaim) {
	c.cd.pending = append(c.cd.pending, pendingClaim{claim: m, ct: c.ct})
}
