package imageref

import (
	"regexp"
	"strings"
)

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
