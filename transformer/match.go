package transformer

import (
	"regexp"
	"strings"

	"github.com/bomstream/bomstream/schemas/cmdline"
	"github.com/bomstream/bomstream/schemas/imageref"
)

// What the rules say about an image reference, an image name, a command
// head, a word or a model value: pure functions of the string.

// parsedImage is an image reference as written, parsed, with what Render
// derives from it.
type parsedImage struct {
	img        imageref.Image
	ok         bool   // ParseImage accepted it; the rest is set only then
	name       string // img.Name()
	str        string // img.String()
	proofValue string // "image " + the reference as written (set always)
	tagVersion string // imageref.ParseVersion(img.Tag)
	tagVariant string
	tagHow     string // "tag " + img.Tag
	purl       string // imagePURL(img, "")
	ref        string // its container's bom-ref: "container:" + str
	info       *imageInfo
	// clientImage: a client, SDK, benchmark or mock image (serving
	// clientImages); word is the engine word in its name and wordVersion
	// the version it gives (serving.go).
	clientImage bool
	word        *engineWord
	wordVersion string
}

// image parses the image reference ref and matches its name.
func (r *rules) image(ref string) *parsedImage { return r.memo.images.get(ref, r.parseImage) }

// parseImage parses the image reference ref and matches its name.
func (r *rules) parseImage(ref string) *parsedImage {
	p := &parsedImage{proofValue: "image " + ref}
	img, err := imageref.ParseImage(ref)
	if err != nil {
		return p
	}
	p.img, p.ok = img, true
	p.name = img.Name()
	p.str = img.String()
	p.ref = "container:" + p.str
	p.tagVersion, p.tagVariant = imageref.ParseVersion(img.Tag)
	p.tagHow = "tag " + img.Tag
	p.purl = imagePURL(img, "")
	// Every tag of a repository (10,000 builds of one engine) shares its
	// name's matches: the image rules read the name only.
	p.info = r.memo.names.get(p.name, r.imageInfo)
	p.clientImage = matchAny(r.serving.clientImages, p.name+":"+img.Tag)
	p.word, p.wordVersion = r.imageWord(img.Repository, img.Tag, p.tagVersion)
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

// imageMatch is a runtime whose image pattern matched.
type imageMatch struct {
	rule    *runtimeRule
	version string // from a repository capture, already normalized
	backend string
	tagNone bool           // the tag is no version of this engine
	tagRE   *regexp.Regexp // reads the engine's version in the tag
}

// imageInfo matches an image name against the simulators, the runtimes'
// image patterns (the first of each runtime that matches) and the images
// that bake a model in.
func (r *rules) imageInfo(name string) *imageInfo {
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
				im.version = imageref.Version(strings.NewReplacer("-", ".", "_", ".").Replace(m[p.version]))
			}
			info.matches = append(info.matches, im)
			break
		}
	}
	info.bakedModel, info.byName = r.bakedModel(name)
	return info
}

// bakedModel is the model an image named name bakes in: a NIM's (unless
// the name is a generic NIM's), else the first models.images pattern's
// that no exclude pattern vetoes (byName).
func (r *rules) bakedModel(name string) (model string, byName bool) {
	if r.nimImage != nil {
		generic := false
		for _, g := range r.nimGeneric {
			generic = generic || g.MatchString(name)
		}
		if m := r.nimImage.FindStringSubmatch(name); m != nil && !generic {
			if model = m[r.nimImage.SubexpIndex("model")]; model != "" {
				return model, false
			}
		}
	}
	for _, im := range r.imageModels {
		m := im.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		excluded := false
		for _, x := range im.exclude {
			excluded = excluded || x.MatchString(name)
		}
		if !excluded {
			if model = m[im.re.SubexpIndex("model")]; model != "" {
				return model, true
			}
		}
	}
	return "", false
}

// invInfo is what the rules say of one invocation head: the launch
// patterns it matches (commands, or args-only patterns when the container
// gives no command), and, for a command, the download rules it matches and
// whether it is an engine's client command.
type invInfo struct {
	matches   []headMatch
	downloads []*downloadRule
	client    bool
	// kind is what the serving rules say the program does: "" (nothing
	// they know), or the signal of an idle, client, server, convert or
	// training program (serving.go).
	kind string
}

// headMatch is a launch pattern that matched a head.
type headMatch struct {
	rule    *runtimeRule
	pattern pattern
	value   string // the proof: "command " + the trimmed match
	// program: the args given to an entrypoint start with the engine's
	// own launch command (args: [torchserve, --start]), which an
	// entrypoint that runs its arguments runs, whatever the image.
	program bool
}

// noInv says nothing.
var noInv = &invInfo{}

// head returns what the rules say of an invocation head: of a command,
// or of the args given to an image's entrypoint (argsOnly).
func (r *rules) head(head []byte, argsOnly bool) *invInfo {
	if argsOnly {
		return r.memo.argsOnly.getBytes(head, r.matchArgsHead)
	}
	return r.memo.commands.getBytes(head, r.matchCommandHead)
}

// matchCommandHead is matchHead of a command.
func (r *rules) matchCommandHead(head string) *invInfo { return r.matchHead(head, false) }

// matchArgsHead is matchHead of the args given to an entrypoint.
func (r *rules) matchArgsHead(head string) *invInfo { return r.matchHead(head, true) }

// matchHead matches an invocation head against the launch patterns (the
// first of each runtime that matches), the client commands and the
// download commands.
func (r *rules) matchHead(head string, argsOnly bool) *invInfo {
	info := &invInfo{}
	for _, rt := range r.runtimes {
		pats := rt.commands
		if argsOnly {
			pats = rt.argsOnly
		}
		for _, p := range pats {
			if p.lit != "" && !strings.Contains(head, p.lit) {
				continue
			}
			if m := p.re.FindString(head); m != "" {
				info.matches = append(info.matches, headMatch{rule: rt, pattern: p, value: "command " + strings.TrimSpace(m)})
				break
			}
		}
		if argsOnly {
			for _, p := range rt.commands {
				if p.lit != "" && !strings.Contains(head, p.lit) {
					continue
				}
				if m := p.re.FindString(head); m != "" {
					info.matches = append(info.matches, headMatch{rule: rt, pattern: p, value: "command " + strings.TrimSpace(m), program: true})
					break
				}
			}
		}
		if !argsOnly {
			for _, p := range rt.clients {
				if !info.client && (p.lit == "" || strings.Contains(head, p.lit)) {
					info.client = p.re.MatchString(head)
				}
			}
		}
	}
	if !argsOnly {
		for i := range r.downloads {
			if dr := &r.downloads[i]; dr.command != nil && (dr.commandLit == "" || strings.Contains(head, dr.commandLit)) && dr.command.MatchString(head) {
				info.downloads = append(info.downloads, dr)
			}
		}
		info.kind = r.serving.programKind(head)
	}
	if info.kind == "" && matchAny(r.serving.utilities, head) {
		info.kind = sigDownload
	}
	return info
}

// wordInfo is what the per-word rules (hints, role patterns) find in one word.
type wordInfo struct {
	roles []string
	hints []hintMatch
}

// hintMatch is a hint pattern that matched a word.
type hintMatch struct {
	rule  *runtimeRule
	value string // the proof: "hint " + the match
	conf  string
}

// word returns what the per-word rules say of w.
func (r *rules) word(w string) *wordInfo { return r.memo.words.get(w, r.matchWord) }

// matchWord matches one word against the role patterns and the runtimes'
// hints (the first of each runtime that matches).
func (r *rules) matchWord(w string) *wordInfo {
	info := &wordInfo{}
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
	return info
}

// shell parses a script.
func (r *rules) shell(src string) *cmdline.Script { return r.memo.shells.get(src, cmdline.ParseScript) }
