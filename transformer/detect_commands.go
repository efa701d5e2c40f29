package transformer

import (
	"slices"

	"github.com/bomstream/bomstream/schemas/cmdline"
)

// commandClaims matches one invocation against the launch commands, the
// args-only patterns (for the first invocation of an args-only container whose
// image is the engine's: entry) and takes positional models.
func (r *rules) commandClaims(cd *compDetect, x *ctrScope, inv *cmdline.Invocation, info *invInfo, entry bool) {
	src := 0
	if inv.Program != "" {
		src = inv.ProgramSrc
	} else if len(inv.Words) > 0 {
		src = inv.Words[0].Src
	}
	var done []*runtimeRule
	for _, hm := range info.matches {
		rt, p := hm.rule, hm.pattern
		if inv.Program == "" && (!entry || !hm.program && !x.imageHit(rt.Name)) || slices.Contains(done, rt) {
			continue
		}
		done = append(done, rt)
		if hm.program {
			// The args run the engine's program: read them as a command.
			inv = programOf(inv)
		}
		conf := confDeclared
		if p.conf != "" {
			conf = p.conf
		}
		switch {
		case inv.Program == "":
			x.signal(r.serving, sigEntrypoint, hm.value, "", x.loc(src), "", rt)
		case inv.Background:
			x.signal(r.serving, sigLaunchBg, hm.value, "", x.loc(src), "", rt)
		default:
			x.signal(r.serving, sigLaunch, hm.value, "", x.loc(src), "", rt)
		}
		h := cd.hit(rt, conf, proof{conf: conf, value: hm.value, locator: x.loc(src)})
		if m, ok := x.matchOf(rt.Name); ok && x.img != nil {
			x.imageVersionClaim(h, m)
		}
		if p.backend != "" {
			cd.backend(rt.Name, p.backend, proof{conf: confDeclared, value: hm.value, locator: x.loc(src)})
		}
		x.engineModelFlags(inv, rt)
		if p.model {
			x.positionalModels(inv, rt, p.models)
		}
	}
}

// programOf is inv, args given to an entrypoint, read as the command
// its first word runs.
func programOf(inv *cmdline.Invocation) *cmdline.Invocation {
	if len(inv.Words) == 0 {
		return inv
	}
	out := *inv
	out.Program, out.ProgramSrc, out.Words = inv.Words[0].Text, inv.Words[0].Src, inv.Words[1:]
	if len(inv.Positionals) > 0 && inv.Positionals[0].Src == inv.Words[0].Src && inv.Positionals[0].Text == inv.Words[0].Text {
		out.Positionals = inv.Positionals[1:]
	}
	return &out
}

// engineModelFlags takes the models named by the flags that name one only
// for the engine rt.
func (x *ctrScope) engineModelFlags(inv *cmdline.Invocation, rt *runtimeRule) {
	for _, f := range inv.Flags {
		if f.HasValue && rt.modelFlags[f.Name] {
			x.claim(modelClaim{value: f.Value, conf: confDeclared, how: "flag " + f.Name, locator: x.loc(f.ValueSrc)})
		}
	}
}

// positionalModels takes the first positional past rt's subcommands as a
// model, or every one when all is set.
func (x *ctrScope) positionalModels(inv *cmdline.Invocation, rt *runtimeRule, all bool) {
	for _, w := range inv.Positionals {
		if rt.subcommands[w.Text] {
			continue
		}
		x.claim(modelClaim{value: w.Text, conf: confDeclared, how: "positional", locator: x.loc(w.Src)})
		if !all {
			break
		}
	}
}

// invocationInfo is what the rules say of the head of inv.
func (r *rules) invocationInfo(inv *cmdline.Invocation) *invInfo {
	var buf [256]byte
	if head := appendHead(buf[:0], inv, r.headWords); len(head) > 0 {
		return r.head(head, inv.Program == "")
	}
	return noInv
}

// appendHead appends the head of inv to dst: the program and its first
// words joined by spaces, at most 512 bytes and, when words > 0, at most
// that many words with the program: launch patterns only look at the
// start.
func appendHead(dst []byte, inv *cmdline.Invocation, words int) []byte {
	const maxHead = 512
	maxWords := 8
	if words > 0 {
		maxWords = words
		if inv.Program != "" {
			maxWords--
		}
	}
	b := append(dst, inv.Program...)
	for i, w := range inv.Words {
		if i >= maxWords || len(b)-len(dst) >= maxHead {
			break
		}
		if len(b) > len(dst) {
			b = append(b, ' ')
		}
		t := w.Text
		if len(t) > maxHead {
			t = t[:maxHead]
		}
		b = append(b, t...)
	}
	return b
}
