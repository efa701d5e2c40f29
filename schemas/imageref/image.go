package imageref

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// Image is a parsed container image reference.
//
// Registry defaults to docker.io and single-segment Docker Hub repositories get
// the library/ prefix, so "nginx" and "docker.io/library/nginx" name the same
// image. Tag and Digest are empty when the reference has none.
type Image struct {
	Ref        string `json:"ref"`
	Registry   string `json:"registry"`
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     string `json:"digest,omitempty"`
}

// ErrUnresolvedImage is wrapped by ParseImage for references that are not
// images yet: empty, templated (${VERSION}, <image>, REPLACE_X) or malformed.
var ErrUnresolvedImage = errors.New("unresolved image reference")

const defaultRegistry = "docker.io"

// ParseImage parses ref as "[registry/]repository[:tag][@digest]" with the
// grammar of the registries themselves (github.com/distribution/reference,
// as docker and containerd read references). It never panics; anything that
// is not a valid reference is an error wrapping ErrUnresolvedImage.
func ParseImage(ref string) (Image, error) {
	img := Image{Ref: ref}
	s := strings.TrimSpace(ref)
	s = strings.TrimPrefix(s, "docker-pullable://")
	s = strings.TrimPrefix(s, "docker://")
	if s == "" {
		return img, fmt.Errorf("image %q: empty: %w", ref, ErrUnresolvedImage)
	}
	if len(s) > 4096 {
		return img, fmt.Errorf("image of %d bytes: too long: %w", len(s), ErrUnresolvedImage)
	}
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return img, fmt.Errorf("image %q: %w: %w", ref, ErrUnresolvedImage, err)
	}
	img.Registry = reference.Domain(named)
	img.Repository = reference.Path(named)
	if img.Registry == "" || img.Repository == "" {
		// A first segment with a dot names a registry; when it is no valid
		// host name ("a.b_c/d") the library keeps it in the path and
		// leaves the registry empty. A runtime would fail to pull it.
		return img, fmt.Errorf("image %q: no valid registry: %w", ref, ErrUnresolvedImage)
	}
	if t, ok := named.(reference.Tagged); ok {
		img.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		img.Digest = d.Digest().String()
	}
	return img, nil
}

// Name is "<registry>/<repository>", the string image rules match.
func (i Image) Name() string { return i.Registry + "/" + i.Repository }

// String is the normalized reference.
func (i Image) String() string {
	s := i.Name()
	if i.Tag != "" {
		s += ":" + i.Tag
	}
	if i.Digest != "" {
		s += "@" + i.Digest
	}
	return s
}
