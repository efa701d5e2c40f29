package collector

import (
	"regexp"
	"sort"

	"github.com/bomstream/bomstream/schemas"
)

// pinnedDigest matches an image reference pinned by manifest digest,
// "repo[:tag]@sha256:<64 hex>".
var pinnedDigest = regexp.MustCompile(`@(sha256:[0-9a-f]{64})$`)

// pinnedDigests lists the images of cs that are pinned by digest in the
// manifest itself: their digest is known without a running pod (a manifest
// directory, a GitOps repository), so a BOM can name it and an OCI registry
// can hold the BOM as a referrer of that image. Digests resolved from pods
// are added to these by the cluster collector.
func pinnedDigests(cs []schemas.Component) []schemas.ImageDigest {
	var out []schemas.ImageDigest
	seen := map[string]bool{}
	for _, c := range cs {
		for _, k := range c.Containers {
			m := pinnedDigest.FindStringSubmatch(k.Image)
			if m == nil || seen[k.Image] {
				continue
			}
			seen[k.Image] = true
			out = append(out, schemas.ImageDigest{Image: k.Image, Digest: m[1], Locator: k.Locator + ".image"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out
}
