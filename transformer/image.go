package transformer

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

// PURL is the package URL of the image per the purl "oci" type:
// pkg:oci/<last path segment, lower case>[@<digest>]?repository_url=<registry/repository>[&tag=<tag>].
// digest overrides the reference's own digest when not empty.
func (i Image) PURL(digest string) string {
	if digest == "" {
		digest = i.Digest
	}
	name := i.Repository
	if j := strings.LastIndexByte(name, '/'); j >= 0 {
		name = name[j+1:]
	}
	var b strings.Builder
	b.Grow(len(name) + len(i.Registry) + len(i.Repository) + len(i.Tag) + len(digest) + 48)
	b.WriteString("pkg:oci/")
	b.WriteString(purlEscape(strings.ToLower(name), false))
	if digest != "" {
		b.WriteByte('@')
		b.WriteString(purlEscape(digest, false))
	}
	b.WriteString("?repository_url=")
	b.WriteString(purlEscape(i.Name(), true))
	if i.Tag != "" {
		b.WriteString("&tag=")
		b.WriteString(purlEscape(i.Tag, true))
	}
	return b.String()
}

// purlEscape percent-encodes everything outside the unreserved set; in
// qualifier values "/" and ":" stay as they are.
func purlEscape(s string, qualifier bool) string {
	const hex = "0123456789ABCDEF"
	clean := true
	for i := 0; i < len(s); i++ {
		if !purlSafe(s[i], qualifier) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if purlSafe(c, qualifier) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func purlSafe(c byte, qualifier bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '-' || c == '.' || c == '_' || c == '~':
		return true
	case qualifier && (c == '/' || c == ':'):
		return true
	}
	return false
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

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
	return algo != "sha256" || len(hexs) == 64
}

// Version extracts a release version from a tag or a version field:
// "v0.8.5" -> "0.8.5", "23.10-py3" -> "23.10", "1.12" -> "1.12". Tags that are
// not versions ("latest", "main", "my-tag", "2025-05-05-v1", "${VERSION}")
// give "".
func Version(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 1 && (s[0] == 'v' || s[0] == 'V') && s[1] >= '0' && s[1] <= '9' {
		s = s[1:]
	}
	// Digits and dots, at least one dot, then optionally "-" or "+" and anything.
	end, dots := 0, 0
	for end < len(s) {
		c := s[end]
		if c == '.' {
			if end == 0 || s[end-1] == '.' {
				return ""
			}
			dots++
		} else if c < '0' || c > '9' {
			break
		}
		end++
	}
	if dots == 0 || end == 0 || s[end-1] == '.' {
		return ""
	}
	if end < len(s) && s[end] != '-' && s[end] != '+' {
		// A pre-release glued to the number: 0.8.5rc1, 1.0.0a2.
		j := end
		for j < len(s) && (isLowerAlnum(s[j]) || 'A' <= s[j] && s[j] <= 'Z') {
			j++
		}
		if j < len(s) && s[j] != '-' && s[j] != '+' {
			return ""
		}
		end = j
	}
	// A date such as 2024.05.01 is not a release.
	if first, _, _ := strings.Cut(s[:end], "."); len(first) == 4 && dots >= 2 {
		return ""
	}
	return s[:end]
}
