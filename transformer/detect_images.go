package transformer

import (
	"strings"

	digest "github.com/opencontainers/go-digest"

	"github.com/bomstream/bomstream/schemas"
)

// imageStep reads the image of a container: its container component, with
// the digests the cluster resolved it to, then what the image patterns say
// (an engine simulator, or engines and their versions, unless the container
// is a client) and the model it bakes in.
func (r *rules) imageStep(cd *compDetect, x *ctrScope, d *detection, digests map[string][]string) {
	ct := x.ct
	if ct.Image == "" {
		d.noImage = append(d.noImage, ct.Locator)
		return
	}
	pi := r.image(ct.Image)
	key := imageKey(ct.Image, pi)
	ch := d.container(key, ct.Image, pi)
	ch.proofs.add(proof{conf: confDeclared, value: pi.proofValue, locator: x.imageLoc})
	ch.containers.add(ct.Name)
	for _, dg := range digests[ct.Image] {
		ch.digests.add(dg)
	}
	if pi.ok {
		x.img = pi
		for _, dg := range digests[pi.str] {
			ch.digests.add(dg)
		}
		if pi.img.Digest != "" {
			ch.digests.add(pi.img.Digest)
		}
		info := pi.info
		if info.sim != nil {
			x.simulator = info.sim.Name
			ch.simulator = info.sim.Name
			d.simulator(info.sim)
			// A simulator serves an engine's API, with no engine behind it.
			x.signal(r.serving, sigImage, pi.proofValue, "(simulates "+info.sim.Simulates+")", x.imageLoc, "", nil)
		} else if !x.client {
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
}

// container is the container component of the image key, added on first
// sight.
func (d *detection) container(key, raw string, pi *parsedImage) *containerHit {
	ch, found := d.containers.get(key)
	if !found {
		ch = &containerHit{key: key, raw: raw}
		ch.proofs = ch.proofRoom[:0]
		if pi.ok {
			ch.image = pi
		}
		d.containers.put(key, ch)
	}
	return ch
}

// simulator records an engine simulator, with the engine it imitates.
func (d *detection) simulator(sim *notRuntime) {
	for i := range d.simulators {
		if d.simulators[i].name == sim.Name {
			d.simulators[i].conf = sim.Simulates
			return
		}
	}
	d.simulators = append(d.simulators, confOf{name: sim.Name, conf: sim.Simulates})
}

// imageClaims: image patterns give an inferred runtime, its version from the tag
// or a repository capture, and maybe a backend.
func (r *rules) imageClaims(cd *compDetect, x *ctrScope, info *imageInfo) {
	x.matches = info.matches
	for _, m := range info.matches {
		rt := m.rule
		x.signal(r.serving, sigImage, x.img.proofValue, "", x.imageLoc, "", rt)
		h := cd.hit(rt, confInferred, proof{conf: confInferred, value: x.img.proofValue, locator: x.imageLoc})
		x.imageVersionClaim(h, m)
		if m.backend != "" {
			cd.backend(rt.Name, m.backend, proof{conf: confInferred, value: x.img.proofValue, locator: x.imageLoc})
		}
	}
}

// digestIndex maps each image of the cluster's digests, as written and as
// parsed, to the digests it was resolved to.
func (r *rules) digestIndex(ds []schemas.ImageDigest) map[string][]string {
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
		if p := r.image(d.Image); p.ok && p.str != d.Image {
			m[p.str] = append(m[p.str], dg)
		}
	}
	return m
}

// validDigest reports an "algorithm:hex" digest: the algorithm in the
// grammar of the OCI image spec, at least 32 hex digits (either case), 64
// for sha256. It is laxer than digest.Digest.Validate, which takes only
// the algorithms it can compute and lower-case hex; the cluster's digests
// are kept as written.
func validDigest(s string) bool {
	algo, hexs, ok := strings.Cut(s, ":")
	if !ok || algo == "" || len(hexs) < 32 {
		return false
	}
	for i := 0; i < len(algo); i++ {
		if c := algo[i]; !(isLowerAlnum(c) || c == '+' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	for i := 0; i < len(hexs); i++ {
		c := hexs[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return digest.Algorithm(algo) != digest.SHA256 || len(hexs) == 64
}

// isLowerAlnum reports a lower-case ASCII letter or a digit.
func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
