package transformer

import (
	pathpkg "path"
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

// Where a model the server loads from a local path comes from.
//
// A server is often given a directory: --model /models/llama. What it holds
// is told elsewhere in the pod: an image volume mounted there (a model
// packaged as an OCI image or artifact), or an init container (or an
// earlier command of the same script) that downloaded a Hugging Face
// repository or a bucket into it. The model is then named by that source,
// with its revision, and the path becomes a property of it: one model
// component, not two. Paths are compared through the volumes the
// containers mount (an init container may mount the volume elsewhere), or
// as written when neither container mounts one.

// download is one model a command fetched, and where it put it.
type download struct {
	claim modelClaim
	dest  string // "" when it goes to a cache (huggingface-cli without --local-dir)
	ct    *schemas.Container
}

// pendingClaim is a model claim of one container, kept until every
// container of its component has been read, so that a path can be linked
// to what another container put there.
type pendingClaim struct {
	claim modelClaim
	ct    *schemas.Container
}

// resolveClaims links the model claims of one component to their sources
// (an image volume, a download) and records them, then the downloads
// themselves and the image volumes no claim named.
func (r *rules) resolveClaims(cd *compDetect, d *detection, c *schemas.Component) {
	var used map[string]bool
	if len(c.Volumes) > 0 {
		used = map[string]bool{}
	}
	served := make([]bool, len(cd.downloads)) // downloads a server path is linked to
	for i := range cd.pending {
		m, linked, k := r.linkClaim(c, &cd.pending[i], cd.downloads)
		if linked && used != nil {
			used[m.value] = true
		}
		if k >= 0 {
			served[k] = true
		}
		r.addModel(cd, d, m)
	}
	for k, dl := range cd.downloads {
		if served[k] {
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

// findDownloads appends to out the download commands among one
// container's invocations (heads holds their rule matches), and the
// container itself when its image is a download rule's (an args-only
// storage initializer).
func (r *rules) findDownloads(out []download, ct *schemas.Container, x *ctrScope, invs []cmdline.Invocation, heads []*invInfo) []download {
	if len(r.downloads) == 0 {
		return out
	}
	first := len(out)
	cwd := ""
	for ii := range invs {
		inv := &invs[ii]
		if inv.Program == "cd" && len(inv.Positionals) > 0 {
			cwd = joinPath(cwd, inv.Positionals[0].Text)
			continue
		}
		var rule *downloadRule
		switch {
		case len(heads[ii].downloads) > 0:
			rule = heads[ii].downloads[0]
		case inv.Program == "" && ii == 0 && x.img != nil:
			for i := range r.downloads {
				if dr := &r.downloads[i]; dr.image != nil && dr.image.MatchString(x.img.name) {
					rule = dr
					break
				}
			}
		}
		if rule != nil {
			if dl, ok := r.readDownload(rule, inv, x); ok {
				if dl.dest != "" {
					dl.dest = joinPath(cwd, dl.dest)
					dl.claim.path = dl.dest
				}
				dl.ct = ct
				out = append(out, dl)
			}
		}
		// git checkout REV pins what an earlier git clone of this
		// container fetched.
		if inv.Program != "" && strings.HasSuffix(inv.Program, "git") && len(inv.Positionals) >= 2 && inv.Positionals[0].Text == "checkout" {
			for k := len(out) - 1; k >= first; k-- {
				if out[k].claim.how == "download git-clone" {
					out[k].claim.revision = inv.Positionals[1].Text
					break
				}
			}
		}
	}
	return out
}

// readDownload reads one download invocation.
func (r *rules) readDownload(dr *downloadRule, inv *cmdline.Invocation, x *ctrScope) (download, bool) {
	var dl download
	if dr.Code != nil {
		return r.codeDownload(dr, inv, x)
	}
	how := "download " + dr.Name
	srcIdx := -1
	if dr.sourceImage {
		if x.img == nil || len(inv.Words) == 0 {
			return dl, false
		}
		dl.claim = modelClaim{value: "oci://" + x.ct.Image, conf: confDeclared, how: how, locator: x.imageLoc}
		dl.dest = lastPositional(inv, 0)
		return dl, dl.dest != ""
	}
	if dr.sourcePositional {
		for i, w := range inv.Words {
			if dr.subcommands[w.Text] || strings.HasPrefix(w.Text, "-") || isFlagValue(inv, i) {
				continue
			}
			srcIdx = i
			break
		}
	} else {
		for i, w := range inv.Words {
			if dr.source.MatchString(w.Text) {
				srcIdx = i
				break
			}
		}
	}
	if srcIdx < 0 {
		return dl, false
	}
	src := inv.Words[srcIdx]
	value := strings.TrimSuffix(strings.TrimSuffix(src.Text, "/*"), "/")
	dl.claim = modelClaim{value: value, hf: dr.HF, conf: confDeclared, how: how, locator: x.loc(src.Src)}
	for _, f := range inv.Flags {
		if !f.HasValue {
			continue
		}
		if dr.dest[f.Name] {
			dl.dest = f.Value
		}
		if dr.rev[f.Name] && f.Value != schemas.RedactedValue && !unresolvedRef(f.Value) {
			dl.claim.revision = f.Value
		}
	}
	if dl.dest == "" && len(dr.dest) == 0 {
		dl.dest = lastPositional(inv, srcIdx+1)
		if dl.dest == "" && dr.Name == "git-clone" {
			dl.dest = strings.TrimSuffix(pathpkg.Base(value), ".git")
		}
	}
	return dl, true
}

// codeDownload reads a Python call such as snapshot_download(repo_id=...,
// revision=..., local_dir=...) in the value of the rule's flag.
func (r *rules) codeDownload(dr *downloadRule, inv *cmdline.Invocation, x *ctrScope) (download, bool) {
	cr := dr.Code
	for _, f := range inv.Flags {
		if f.Name != cr.Flag || !f.HasValue {
			continue
		}
		how := "download " + dr.Name
		for _, call := range schemas.PythonCalls(f.Value, cr.Calls) {
			src := call.Arg(cr.Source, 0)
			if src == "" {
				continue
			}
			dl := download{claim: modelClaim{value: src, hf: true, conf: confDeclared, how: how + " " + call.Name, locator: x.loc(f.ValueSrc)}}
			if cr.Revision != "" {
				dl.claim.revision = call.Arg(cr.Revision, -1)
			}
			for _, d := range cr.Dest {
				if v := call.Arg(d, -1); v != "" {
					dl.dest = v
					break
				}
			}
			return dl, true
		}
	}
	return download{}, false
}

// lastPositional is the last word of inv from index from that is neither
// a flag nor a URI nor a flag's value: where a copy command puts things.
func lastPositional(inv *cmdline.Invocation, from int) string {
	for i := len(inv.Words) - 1; i >= from; i-- {
		w := inv.Words[i].Text
		if strings.HasPrefix(w, "-") || strings.Contains(w, "://") || isFlagValue(inv, i) && !isPositional(inv, i) {
			continue
		}
		return w
	}
	return ""
}

// isFlagValue reports whether word i of inv is the value of a flag.
func isFlagValue(inv *cmdline.Invocation, i int) bool {
	if i == 0 {
		return false
	}
	for _, f := range inv.Flags {
		if f.HasValue && f.ValueSrc == inv.Words[i].Src && f.Src == inv.Words[i-1].Src && f.Src != f.ValueSrc {
			return true
		}
	}
	return false
}

// isPositional reports whether word i of inv is one of its positionals.
func isPositional(inv *cmdline.Invocation, i int) bool {
	for _, p := range inv.Positionals {
		if p.Src == inv.Words[i].Src && p.Text == inv.Words[i].Text {
			return true
		}
	}
	return false
}

// joinPath resolves p against the directory dir ("" when unknown).
func joinPath(dir, p string) string {
	if p == "" || strings.HasPrefix(p, "/") || dir == "" {
		return pathpkg.Clean(p)
	}
	return pathpkg.Join(dir, p)
}

// onVolume maps a path seen by ct to the volume holding it and the path
// within that volume, through the mount whose path is its longest prefix.
func onVolume(ct *schemas.Container, p string) (vol, rel string, ok bool) {
	p = pathpkg.Clean(p)
	best, bestPath := -1, ""
	for i, m := range ct.Mounts {
		mp := pathpkg.Clean(m.Path)
		if (p == mp || strings.HasPrefix(p, mp+"/") || mp == "/") && (best < 0 || len(mp) > len(bestPath)) {
			best, bestPath = i, mp
		}
	}
	if best < 0 {
		return "", "", false
	}
	m := ct.Mounts[best]
	rest := strings.TrimPrefix(strings.TrimPrefix(p, bestPath), "/")
	return m.Volume, pathpkg.Join("/", m.SubPath, rest), true
}

// within reports whether path p is dir or below it.
func within(p, dir string) bool {
	p, dir = pathpkg.Clean(p), pathpkg.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// linkClaim resolves a local path a server is given to where it comes
// from: an image volume mounted there, or a download into it. ok is false
// when the claim is no local path or nothing in the component fills it;
// linked is the index in dls of the download it was linked to, -1 when none.
func (r *rules) linkClaim(c *schemas.Component, pc *pendingClaim, dls []download) (out modelClaim, ok bool, linked int) {
	m := pc.claim
	v := strings.TrimSpace(m.value)
	if !strings.HasPrefix(v, "/") || unresolvedRef(v) {
		return m, false, -1
	}
	vol, rel, mounted := onVolume(pc.ct, v)
	for k := len(dls) - 1; k >= 0; k-- {
		dl := &dls[k]
		if dl.dest == "" {
			continue
		}
		linked := false
		if dvol, drel, ok := onVolume(dl.ct, dl.dest); ok && mounted {
			linked = dvol == vol && within(rel, drel)
		} else if !ok && !mounted || dl.ct == pc.ct {
			linked = within(v, dl.dest)
		}
		if linked {
			out := dl.claim
			out.path, out.pathLocator = v, m.locator
			out.simulated = m.simulated
			return out, true, k
		}
	}
	if mounted {
		for _, vv := range c.Volumes {
			if vv.Name == vol && vv.Image != "" {
				return modelClaim{value: "oci://" + vv.Image, conf: m.conf, how: m.how + " on image volume " + vv.Name,
					locator: vv.Locator, path: v, pathLocator: m.locator, simulated: m.simulated}, true, -1
			}
		}
	}
	return m, false, -1
}

// volumeClaims are the image volumes a component's containers mount that
// no claim named: models, inferred, that do not make a BOM on their own.
func volumeClaims(c *schemas.Component, used map[string]bool) []modelClaim {
	var out []modelClaim
	for _, v := range c.Volumes {
		if v.Image == "" || used["oci://"+v.Image] {
			continue
		}
		for k := range c.Containers {
			ct := &c.Containers[k]
			for _, mt := range ct.Mounts {
				if mt.Volume == v.Name {
					out = append(out, modelClaim{value: "oci://" + v.Image, conf: confInferred, how: "image volume " + v.Name,
						locator: v.Locator, path: mt.Path, weak: true})
					used["oci://"+v.Image] = true
				}
			}
		}
	}
	return out
}
