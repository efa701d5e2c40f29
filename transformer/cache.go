package transformer

import (
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// matchCache memoizes what the rules say about an image reference, an image
// name, a command head, a word or a model value. All are pure functions of the
// string, so the cache never changes an answer; it only saves the parsing and
// regex work for strings seen before. Cached values are never modified.
// It is bounded: past maxEntries new answers are computed and not stored.
type matchCache struct {
	parsed sync.Map    // string -> *parsedImage
	images sync.Map    // string -> *imageInfo
	heads  sync.Map    // headKey -> *invInfo
	words  sync.Map    // string -> *wordInfo
	models [2]sync.Map // model value -> *modelInfo, for hf false and true
	shells sync.Map    // script -> *shellScript
	envs   sync.Map    // env name -> bool: a client's env
	n      atomic.Int64
}

const maxCacheEntries = 8192

// parsedImage is an image reference as written, parsed, with what Render
// derives from it.
type parsedImage struct {
	img        Image
	ok         bool   // ParseImage accepted it; the rest is set only then
	name       string // img.Name()
	str        string // img.String()
	proofValue string // "image " + the reference as written (set always)
	tagVersion string // ParseVersion(img.Tag)
	tagVariant string
	tagHow     string // "tag " + img.Tag
	ref        string // "container:" + img.String()
	purl       string // img.PURL("")
	info       *imageInfo
}

// maxCachedImage keeps absurd references out of the cache.
const maxCachedImage = 512

func (c *matchCache) parse(r *rules, ref string) *parsedImage {
	if v, ok := c.parsed.Load(ref); ok {
		return v.(*parsedImage)
	}
	p := &parsedImage{proofValue: "image " + ref}
	img, err := ParseImage(ref)
	if err == nil {
		p.img, p.ok = img, true
		p.name = img.Name()
		p.str = img.String()
		p.tagVersion, p.tagVariant = ParseVersion(img.Tag)
		p.tagHow = "tag " + img.Tag
		p.ref = "container:" + p.str
		p.purl = img.PURL("")
		p.info = c.image(r, p.name)
	}
	if len(ref) <= maxCachedImage {
		c.store(&c.parsed, ref, p)
	}
	return p
}

// imageInfo is what the rules find in one image name.
type imageInfo struct {
	matches    []imageMatch
	sim        *notRuntime
	bakedModel string // the model the image bakes in (a NIM or an images rule)
	// byName: bakedModel comes from models.images, not from the NIM rule.
	byName bool
}

type imageMatch struct {
	rule    *runtimeRule
	version string // from a repository capture, already normalized
	backend string
	tagNone bool           // the tag is no version of this engine
	tagRE   *regexp.Regexp // reads the engine's version in the tag
}

type headKey struct {
	head     string
	argsOnly bool
}

type headMatch struct {
	rule    *runtimeRule
	pattern pattern
	value   string // the proof: "command " + the trimmed match
}

func (c *matchCache) store(m *sync.Map, k, v any) {
	if c.n.Load() < maxCacheEntries {
		c.n.Add(1)
		m.Store(k, v)
	}
}

func (c *matchCache) image(r *rules, name string) *imageInfo {
	if v, ok := c.images.Load(name); ok {
		return v.(*imageInfo)
	}
	info := &imageInfo{}
	for i := range r.notRuntimes {
		if r.notRuntimes[i].re.MatchString(name) {
			info.sim = &r.notRuntimes[i]
			break
		}
	}
	for _, rt := range r.runtimes {
		for _, p := range rt.images {
			m := p.re.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			im := imageMatch{rule: rt, backend: p.backend, tagNone: p.tagNone, tagRE: p.tagRE}
			if p.version >= 0 && m[p.version] != "" {
				im.version = Version(strings.NewReplacer("-", ".", "_", ".").Replace(m[p.version]))
			}
			info.matches = append(info.matches, im)
			break
		}
	}
	if r.nimImage != nil {
		generic := false
		for _, g := range r.nimGeneric {
			generic = generic || g.MatchString(name)
		}
		if m := r.nimImage.FindStringSubmatch(name); m != nil && !generic {
			info.bakedModel = m[r.nimImage.SubexpIndex("model")]
		}
	}
	for _, im := range r.imageModels {
		if info.bakedModel != "" {
			break
		}
		m := im.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		excluded := false
		for _, x := range im.exclude {
			excluded = excluded || x.MatchString(name)
		}
		if !excluded {
			info.bakedModel, info.byName = m[im.re.SubexpIndex("model")], true
		}
	}
	c.store(&c.images, name, info)
	return info
}

// invInfo is what the rules say of one invocation head: the launch
// patterns it matches (commands, or args-only patterns when the container
// gives no command), and, for a command, the download rules it matches and
// whether it is an engine's client command.
type invInfo struct {
	matches   []headMatch
	downloads []*downloadRule
	client    bool
}

var noInv = &invInfo{}

// head returns what the rules say of an invocation head.
func (c *matchCache) head(r *rules, head string, argsOnly bool) *invInfo {
	k := headKey{head, argsOnly}
	if v, ok := c.heads.Load(k); ok {
		return v.(*invInfo)
	}
	var info invInfo
	for _, rt := range r.runtimes {
		pats := rt.commands
		if argsOnly {
			pats = rt.argsOnly
		}
		for _, p := range pats {
			if m := p.re.FindString(head); m != "" {
				info.matches = append(info.matches, headMatch{rule: rt, pattern: p, value: "command " + strings.TrimSpace(m)})
				break
			}
		}
		if !argsOnly {
			for _, p := range rt.clients {
				info.client = info.client || p.re.MatchString(head)
			}
		}
	}
	if !argsOnly {
		for i := range r.downloads {
			if dr := &r.downloads[i]; dr.command != nil && dr.command.MatchString(head) {
				info.downloads = append(info.downloads, dr)
			}
		}
	}
	out := &info
	if len(info.matches) == 0 && len(info.downloads) == 0 && !info.client {
		out = noInv
	}
	c.store(&c.heads, k, out)
	return out
}

// wordInfo is what the per-word rules (hints, role patterns) find in one word.
type wordInfo struct {
	roles []string
	hints []hintMatch
}

type hintMatch struct {
	rule  *runtimeRule
	value string // the proof: "hint " + the match
	conf  string
}

var noWord = &wordInfo{}

// maxCachedWord keeps huge words (a 1 MiB script) out of the cache.
const maxCachedWord = 256

func (c *matchCache) word(r *rules, w string) *wordInfo {
	if len(w) <= maxCachedWord {
		if v, ok := c.words.Load(w); ok {
			return v.(*wordInfo)
		}
	}
	var info wordInfo
	for _, rr := range r.roles {
		if rr.re != nil && rr.re.MatchString(w) {
			info.roles = append(info.roles, rr.Role)
		}
	}
	for _, rt := range r.runtimes {
		for _, h := range rt.hints {
			if m := h.re.FindString(w); m != "" {
				conf := confInferred
				if h.conf != "" {
					conf = h.conf
				}
				info.hints = append(info.hints, hintMatch{rule: rt, value: "hint " + m, conf: conf})
				break
			}
		}
	}
	out := &info
	if len(info.roles) == 0 && len(info.hints) == 0 {
		out = noWord
	}
	if len(w) <= maxCachedWord {
		c.store(&c.words, w, out)
	}
	return out
}

// model classifies a model value (ignored, id, kind and key).
func (c *matchCache) model(r *rules, v string, hf bool) *modelInfo {
	m := &c.models[0]
	if hf {
		m = &c.models[1]
	}
	if len(v) > maxCachedWord {
		return r.classify(v, hf)
	}
	if x, ok := m.Load(v); ok {
		return x.(*modelInfo)
	}
	info := r.classify(v, hf)
	c.store(m, v, info)
	return info
}

// maxCachedScript keeps long scripts out of the cache.
const maxCachedScript = 4096

// shell parses a script, or returns the parse cached for the same text.
func (c *matchCache) shell(src string) *shellScript {
	if len(src) > maxCachedScript {
		return parseShell(src)
	}
	if v, ok := c.shells.Load(src); ok {
		return v.(*shellScript)
	}
	s := parseShell(src)
	c.store(&c.shells, src, s)
	return s
}

// clientEnv reports whether an env name marks a client of a server
// elsewhere (models.clientEnv).
func (c *matchCache) clientEnv(r *rules, name string) bool {
	if v, ok := c.envs.Load(name); ok {
		return v.(bool)
	}
	client := false
	for _, re := range r.clientEnv {
		client = client || re.MatchString(name)
	}
	if len(name) <= maxCachedWord {
		c.store(&c.envs, name, client)
	}
	return client
}
