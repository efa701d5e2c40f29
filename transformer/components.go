package transformer

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	digest "github.com/opencontainers/go-digest"
)

// runtimeComponent makes c the component of one serving engine: an
// application with its version, its purl and bomstream:runtime:*
// properties. Its pointers point into x.
func (b *bomBuilder) runtimeComponent(c *cdx.Component, lr *listedRuntime, x *componentParts) {
	h, v := lr.h, lr.best
	props := slices.Grow(x.props[:0], 4+2*len(h.backends)+h.wrappedBy.len()+len(lr.others)+len(h.roles)+len(h.settings))
	props = append(props,
		prop(propPrefix+"confidence", h.conf),
		prop(propPrefix+"runtime:confidence", h.conf),
		prop(propPrefix+"runtime:name", h.rule.Name),
	)
	for _, be := range h.backends {
		props = append(props, prop(propPrefix+"runtime:backend", be.name))
		if be.conf != confDeclared {
			props = append(props, prop(propPrefix+"runtime:backend:inferred", be.name))
		}
	}
	for _, w := range h.wrappedBy.list() {
		props = append(props, prop(propPrefix+"runtime:wrappedBy", w))
	}
	for _, o := range lr.others {
		props = append(props, prop(propPrefix+"runtime:otherVersion", o))
	}
	if v.variant != "" {
		props = append(props, prop(propPrefix+"runtime:variant", v.variant))
	}
	for _, role := range h.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	props = append(props, h.settings...)
	name := h.rule.Title
	if name == "" {
		name = h.rule.Name
	}
	*c = cdx.Component{
		BOMRef:     lr.ref,
		Type:       cdx.ComponentTypeApplication,
		Name:       name,
		Version:    v.version,
		Properties: sortProps(&x.props, props),
		Evidence:   b.evidence(&x.ev, h.proofs, h.conf, v),
	}
	if h.rule.PURL != "" {
		c.PackageURL = h.rule.PURL
		if v.version != "" {
			c.PackageURL = h.rule.PURL + "@" + v.version
		}
	}
}

// modelComponent makes c the component of one model: a
// machine-learning-model with a pkg:huggingface purl at its first
// revision, or an oci one. Its pointers point into x.
func (b *bomBuilder) modelComponent(c *cdx.Component, m *modelHit, x *componentParts) {
	revs := sortedCopy(m.revisions.list())
	pinned := m.oci != nil && m.oci.Digest != ""
	props := slices.Grow(x.props[:0], 3+len(revs)+len(m.roles)+len(m.props))
	props = append(props,
		prop(propPrefix+"confidence", m.conf),
		prop(propPrefix+"model:location-kind", m.kind),
	)
	if len(revs) == 0 && !pinned {
		props = append(props, prop(propPrefix+"model:unpinned", "true"))
	}
	if pinned {
		props = append(props, prop(propPrefix+"model:digest", m.oci.Digest))
	}
	for _, rev := range revs {
		props = append(props, prop(propPrefix+"model:revision", rev))
	}
	for _, role := range m.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	for k, v := range m.props {
		props = append(props, prop(k, v))
	}
	*c = cdx.Component{
		BOMRef:     m.ref,
		Type:       cdx.ComponentTypeMachineLearningModel,
		Name:       m.name,
		Properties: sortProps(&x.props, props),
		Evidence:   b.evidence(&x.ev, m.proofs, m.conf, versionClaim{}),
	}
	if m.hf {
		rev := ""
		if len(revs) > 0 {
			c.Version, rev = revs[0], revs[0]
		}
		c.PackageURL = b.hfPURL(m.name, rev)
	}
	if m.oci != nil {
		c.PackageURL = imagePURL(*m.oci, "")
		c.Version = m.oci.Tag
		if pinned {
			c.Version = m.oci.Digest
		}
	}
}

// containerComponent makes c the component of one image: a container
// named after the image, at its digest (the cluster's, the first in order,
// or the reference's) or tag, with a pkg:oci purl. Its pointers point into
// x.
func (b *bomBuilder) containerComponent(c *cdx.Component, ch *containerHit, x *componentParts) {
	conf := confDeclared
	digests := sortedCopy(ch.digests.list())
	props := slices.Grow(x.props[:0], 4+len(ch.roles)+len(ch.truncated)+ch.containers.len()+len(digests))
	for _, role := range ch.roles {
		props = append(props, prop(propPrefix+"role", role))
	}
	for _, t := range ch.truncated {
		props = append(props, prop(propPrefix+"truncated", t))
	}
	for _, n := range ch.containers.list() {
		props = append(props, prop(propPrefix+"container:name", n))
	}
	if ch.simulator != "" {
		props = append(props, prop(propPrefix+"simulator", ch.simulator))
	}
	*c = cdx.Component{Type: cdx.ComponentTypeContainer}
	if ch.image == nil {
		conf = confUnresolved
		c.BOMRef = "container:" + ch.raw
		c.Name = ch.raw
		props = append(props, prop(propPrefix+"image:unresolved", "true"), prop(propPrefix+"image:digest", "unresolved"))
	} else {
		props = imageIdentity(c, x, ch.image, digests, props)
	}
	props = append(props, prop(propPrefix+"confidence", conf))
	c.Properties = sortProps(&x.props, props)
	c.Evidence = b.evidence(&x.ev, ch.proofs, conf, versionClaim{})
}

// imageIdentity names c after the parsed image pi resolved to digests
// (sorted): bom-ref, name, version, sha256 hashes (in x) and purl. It
// appends the image's digest and tag properties to props.
func imageIdentity(c *cdx.Component, x *componentParts, pi *parsedImage, digests []string, props []cdx.Property) []cdx.Property {
	img := &pi.img
	c.BOMRef = pi.ref
	c.Name = pi.name
	c.Version = img.Tag
	x.hashes = x.hashes[:0]
	if len(digests) == 0 {
		props = append(props, prop(propPrefix+"image:digest", "unresolved"))
	}
	for _, dg := range digests {
		if d := digest.Digest(dg); d.Algorithm() == digest.SHA256 {
			x.hashes = append(x.hashes, cdx.Hash{Algorithm: cdx.HashAlgoSHA256, Value: strings.ToLower(d.Encoded())})
		}
		props = append(props, prop(propPrefix+"image:digest", dg))
	}
	if len(x.hashes) > 0 {
		c.Hashes = &x.hashes
	}
	if img.Tag != "" {
		props = append(props, prop(propPrefix+"image:tag", img.Tag))
	}
	// The version and purl are at the first digest, the reference's own
	// when there is none.
	c.PackageURL = pi.purl
	if len(digests) > 0 {
		c.Version = digests[0]
		if digests[0] != img.Digest {
			c.PackageURL = imagePURL(*img, digests[0])
		}
	}
	return props
}

// hfPURL is hfPURL(id, rev), remembered by the Renderer.
func (b *bomBuilder) hfPURL(id, rev string) string {
	var buf [160]byte
	k := strconv.AppendInt(buf[:0], int64(len(id)), 10)
	k = append(k, ':')
	k = append(k, id...)
	k = append(k, rev...)
	return b.purls.getBytes(k, func(string) string { return hfPURL(id, rev) })
}

// sortedCopy is a sorted copy of keys.
func sortedCopy(keys []string) []string {
	out := slices.Clone(keys)
	sort.Strings(out)
	return out
}

// prop is a property; name is the full name, propPrefix included.
func prop(name, value string) cdx.Property {
	return cdx.Property{Name: name, Value: value}
}
