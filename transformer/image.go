package transformer

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	packageurl "github.com/package-url/packageurl-go"
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
	q := packageurl.Qualifiers{{Key: "repository_url", Value: i.Name()}}
	if i.Tag != "" {
		q = append(q, packageurl.Qualifier{Key: "tag", Value: i.Tag})
	}
	return purlString(packageurl.NewPackageURL(packageurl.TypeOCI, "", strings.ToLower(name), digest, q, ""))
}

// hfPURL is the package URL of a Hugging Face model id ("name" or
// "org/name"), at rev, lower case, when not "".
func hfPURL(id, rev string) string {
	ns, name := "", id
	if j := strings.LastIndexByte(id, '/'); j >= 0 {
		ns, name = id[:j], id[j+1:]
	}
	return purlString(packageurl.NewPackageURL(packageurl.TypeHuggingface, ns, name, strings.ToLower(rev), nil, ""))
}

// purlString is the canonical form of p. packageurl-go percent-encodes
// every qualifier value as a URL query component; the purl specification's
// canonical form keeps "/" and ":" as they are (repository_url=docker.io/x/y)
// and writes a space as %20. Every "%" of its query starts an escape and a
// "+" stands for a space, so the replacement is exact.
func purlString(p *packageurl.PackageURL) string {
	s := p.ToString()
	path, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	return path + "?" + qualifierEscapes.Replace(query)
}

// qualifierEscapes turns packageurl-go's query escapes into the purl
// specification's.
var qualifierEscapes = strings.NewReplacer("%2F", "/", "%3A", ":", "+", "%20")

// Version is the release version of a tag or a version field, as published
// upstream; see ParseVersion.
func Version(s string) string {
	v, _ := ParseVersion(s)
	return v
}

// ParseVersion splits an image tag or a version field into the engine's
// release version, as its project publishes it, and the build variant:
//
//	v0.8.5                    -> 0.8.5
//	0.4.6.post1               -> 0.4.6.post1
//	v0.4.6.post1-cu124        -> 0.4.6.post1, cu124
//	0.5.0rc2-cu126            -> 0.5.0rc2, cu126
//	1.0.0-rc.1                -> 1.0.0-rc.1
//	2.4.0-rocm                -> 2.4.0, rocm
//	24.08-trtllm-python-py3   -> 24.08, trtllm-python-py3
//	cpu-1.6, 89-1.5           -> 1.6, cpu; 1.5, 89 (variant first, as TEI tags)
//	2.4.0+cu121               -> 2.4.0, cu121 (build metadata)
//
// A version has at least two numeric parts; PEP 440 suffixes (.postN, .devN,
// rcN, aN, bN) and a semver pre-release (-rc.1, -beta2) belong to it. The
// variant (CUDA, ROCm, CPU, Python, architecture, ...) is never the version.
// Tags that are not versions ("latest", "main", "my-tag", "2025-05-05-v1",
// "2024.05.01", "${VERSION}") give "".
func ParseVersion(s string) (version, variant string) {
	s = strings.TrimSpace(s)
	core, build, _ := strings.Cut(s, "+")
	segs := strings.Split(core, "-")
	k := -1
	for i, seg := range segs {
		if v := versionCore(seg); v != "" {
			k = i
			version = v
			break
		}
		if !prefixVariant(seg) {
			return "", ""
		}
	}
	if k < 0 {
		return "", ""
	}
	rest := segs[k+1:]
	if len(rest) > 0 && preRelease.MatchString(rest[0]) {
		version += "-" + rest[0]
		rest = rest[1:]
	}
	var parts []string
	for _, p := range append(append(append([]string(nil), segs[:k]...), rest...), build) {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return version, strings.Join(parts, "-")
}

var (
	// pep440 is a release with PEP 440 pre, post and dev parts; looseVersion a
	// release with any letters and digits glued on (0.8.5rc1, 1.0.0a2).
	pep440       = regexp.MustCompile(`^[vV]?([0-9]+(?:\.[0-9]+)+(?:\.?(?:post|dev|rc|alpha|beta|pre|a|b|c)[0-9]*)*)$`)
	looseVersion = regexp.MustCompile(`^[vV]?([0-9]+(?:\.[0-9]+)+[A-Za-z0-9]*)$`)
	preRelease   = regexp.MustCompile(`^(?:rc|alpha|beta|pre|preview|dev)(?:\.?[0-9]+)*$`)
	// Tokens that come before the version in some tags: cpu-1.6, turing-1.5, 89-1.5.
	variantPrefix = regexp.MustCompile(`^(?:cpu|gpu|cuda[0-9.]*|rocm[0-9.]*|turing|ampere|ada|hopper|blackwell|intel|xpu|hpu|tpu|neuron|[0-9]{2})$`)
)

// versionCore is the release version one dash-free segment holds, or "".
func versionCore(seg string) string {
	m := pep440.FindStringSubmatch(seg)
	if m == nil {
		m = looseVersion.FindStringSubmatch(seg)
	}
	if m == nil {
		return ""
	}
	v := m[1]
	// A date such as 2024.05.01 is not a release.
	if first, rest, _ := strings.Cut(v, "."); len(first) == 4 && strings.Count(rest, ".") >= 1 {
		return ""
	}
	return v
}

// prefixVariant reports a variant that tags put before the version (cpu-1.6).
func prefixVariant(seg string) bool { return variantPrefix.MatchString(strings.ToLower(seg)) }
