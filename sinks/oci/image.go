package oci

import (
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"

	"github.com/bomstream/bomstream/schemas"
)

// Reasons an image of a BOM gets no artifact, as counted in the
// images_skipped_total metric.
const (
	SkipNoDigest     = "no-digest"     // the digest was not resolved (no running pod reported it)
	SkipBadDigest    = "bad-digest"    // the digest does not parse
	SkipBadReference = "bad-reference" // the image reference does not name a repository
)

// dockerHub is the host serving Docker Hub's registry API; "docker.io" is
// only its name.
const dockerHub = "registry-1.docker.io"

// imageRepository returns the repository an image reference names, with
// Docker's defaults: no registry means Docker Hub, and a one-part Docker
// Hub name lives under library/. Tag and digest are dropped.
func imageRepository(image string) (registry.Reference, error) {
	s := image
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		s = s[:i]
	}
	host, path := "", s
	if i := strings.IndexByte(s, '/'); i >= 0 && (strings.ContainsAny(s[:i], ".:") || s[:i] == "localhost") {
		host, path = s[:i], s[i+1:]
	}
	if host == "" || host == "docker.io" || host == "index.docker.io" {
		host = dockerHub
		if !strings.Contains(path, "/") {
			path = "library/" + path
		}
	}
	ref := registry.Reference{Registry: host, Repository: path}
	if err := ref.ValidateRegistry(); err != nil {
		return registry.Reference{}, fmt.Errorf("image %q: %w", image, err)
	}
	if err := ref.ValidateRepository(); err != nil {
		return registry.Reference{}, fmt.Errorf("image %q: %w", image, err)
	}
	return ref, nil
}

// imageDigest returns the manifest digest of a resolved image; the value
// may be a bare digest or a container runtime's imageID
// ("docker-pullable://repo@sha256:...").
func imageDigest(d schemas.ImageDigest) (digest.Digest, error) {
	s := d.Digest
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimPrefix(s, "docker-pullable://")
	dg, err := digest.Parse(s)
	if err != nil {
		return "", fmt.Errorf("image %s: digest %q: %w", d.Image, d.Digest, err)
	}
	return dg, nil
}
