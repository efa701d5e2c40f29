package transformer

import (
	"strconv"

	"github.com/bomstream/bomstream/schemas"
)

// ctrScope is one container being read: what its claims share and the
// model claims gathered from it.
type ctrScope struct {
	ct       *schemas.Container
	env      map[string]string // the literal env values
	invs     []Invocation      // the programs it runs
	infos    []*invInfo        // what the rules say of the head of each of invs
	client   bool              // it talks to a server elsewhere (see isClient)
	img      *parsedImage      // nil when the image is missing or unparsed
	imageLoc string            // ct.Locator + ".image"
	// simulator names the engine simulator the image is, if it is one.
	simulator string
	// imageHits names the runtimes the image matched; matches are those
	// matches.
	imageHits []string
	matches   []imageMatch
	// models are the model claims of the container; revision is the one a
	// flag or env pins them to.
	models   []modelClaim
	revision string
}

// container reads one container, one step per kind of rule: its image, then
// for each program it runs the launch commands, flags and words, then its
// env; the model claims it makes wait in cd.pending for the component's
// other containers, and so do its downloads.
func (r *rules) container(cd *compDetect, ct *schemas.Container, d *detection, digests map[string][]string) {
	x := r.readContainer(ct)
	r.imageStep(cd, x, d, digests)
	for ii := range x.invs {
		r.invocationClaims(cd, x, ii)
	}
	r.envClaims(cd, x)
	for _, m := range x.models {
		if x.revision != "" {
			m.revision = x.revision
		}
		if x.simulator != "" {
			m.simulated = x.simulator
		}
		// A client's models are a server's elsewhere.
		m.weak = m.weak || x.client
		cd.pending = append(cd.pending, pendingClaim{claim: m, ct: ct})
	}
	cd.downloads = r.findDownloads(cd.downloads, ct, x, x.invs, x.infos)
}

// readContainer parses what ct runs: its command and args, and the env
// vars read as arguments (rules argsEnv), and says whether it is a client.
func (r *rules) readContainer(ct *schemas.Container) *ctrScope {
	x := &ctrScope{ct: ct, imageLoc: ct.Locator + ".image"}
	for _, e := range ct.Env {
		if e.Value != "" && !e.Redacted && e.From == nil {
			if x.env == nil {
				x.env = make(map[string]string, len(ct.Env))
			}
			x.env[e.Name] = e.Value
		}
	}
	x.invs = parseArgs(ct.Command, ct.Args, ParseOptions{Env: x.env, Booleans: r.booleans}, r.shell)
	for k, e := range ct.Env {
		if !r.argsEnv[e.Name] || e.Value == "" || e.Redacted {
			continue
		}
		for _, words := range r.shell(e.Value).expand(x.env) {
			ws := make([]Word, len(words))
			for i, w := range words {
				ws[i] = Word{Text: w, Src: -1 - k}
			}
			p := argParser{opt: ParseOptions{Booleans: r.booleans}}
			p.emit(Invocation{Words: ws}, false)
			x.invs = append(x.invs, p.out...)
		}
	}
	x.infos = make([]*invInfo, len(x.invs))
	for ii := range x.invs {
		x.infos[ii] = r.invocationInfo(&x.invs[ii])
	}
	x.client = r.isClient(ct, x.invs, x.infos)
	return x
}

// invocationClaims reads one program the container runs: its launch
// command, the flags that name a model only for the engine of the image's
// entrypoint, its flags and its words.
func (r *rules) invocationClaims(cd *compDetect, x *ctrScope, ii int) {
	inv := &x.invs[ii]
	// The container's args given to the image's entrypoint.
	entry := len(x.ct.Command) == 0 && inv.Program == "" && ii == 0
	if x.simulator == "" && !x.client {
		r.commandClaims(cd, x, inv, x.infos[ii], entry)
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

// imageHit reports whether the image matched the runtime named name.
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
