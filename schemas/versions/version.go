package versions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas/imageref"
)

// Version is a parsed release version. The zero Version is not valid; use
// Parse.
type Version struct {
	release []int
	// pre is the pre-release: kind (preAlpha, preBeta, preRC; 0 = none)
	// and number.
	preKind, preNum int
	// post and dev are the post- and dev-release numbers, -1 when absent.
	post, dev int
	text      string
}

const (
	preNone = iota
	preAlpha
	preBeta
	preRC
)

// String is the version as it was read (after the transformer's parsing).
func (v Version) String() string { return v.text }

// suffix is one PEP 440 suffix part: a separator, a word and a number.
var suffix = regexp.MustCompile(`^[.\-_]?(alpha|beta|preview|pre|post|dev|rc|a|b|c)[.\-_]?([0-9]*)`)

// Parse reads a runtime version: what the transformer renders (0.8.5,
// 0.4.6.post1, 1.0.0-rc.1) or a raw tag it would read (v0.5.2-cu126). It
// returns an error naming s when s holds no release version the
// transformer recognises, or suffixes this package cannot order.
func Parse(s string) (Version, error) {
	norm := imageref.Version(s)
	if norm == "" {
		return Version{}, fmt.Errorf("version %q: not a release version (a tag such as latest, a date, or no version)", s)
	}
	v := Version{post: -1, dev: -1, text: norm}
	rest := strings.ToLower(norm)
	i := 0
	for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
		i++
	}
	for p := range strings.SplitSeq(strings.TrimRight(rest[:i], "."), ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("version %q: release part %q: %w", s, p, err)
		}
		v.release = append(v.release, n)
	}
	if strings.HasSuffix(rest[:i], ".") && i < len(rest) {
		i-- // "0.6.3.post1": the dot belongs to the suffix
	}
	rest = rest[i:]
	for rest != "" {
		m := suffix.FindStringSubmatch(rest)
		if m == nil {
			return Version{}, fmt.Errorf("version %q: cannot order the suffix %q", s, rest)
		}
		n := 0
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2]) // digits only, by the pattern
		}
		if err := v.setSuffix(m[1], n); err != nil {
			return Version{}, fmt.Errorf("version %q: %w", s, err)
		}
		rest = rest[len(m[0]):]
	}
	return v, nil
}

// setSuffix records one suffix, refusing a part given twice or out of the
// PEP 440 order (pre, post, dev).
func (v *Version) setSuffix(word string, n int) error {
	switch word {
	case "post":
		if v.post >= 0 || v.dev >= 0 {
			return fmt.Errorf("post-release %q out of place", word)
		}
		v.post = n
	case "dev":
		if v.dev >= 0 {
			return fmt.Errorf("second dev-release")
		}
		v.dev = n
	default:
		if v.preKind != preNone || v.post >= 0 || v.dev >= 0 {
			return fmt.Errorf("pre-release %q out of place", word)
		}
		switch word {
		case "a", "alpha":
			v.preKind = preAlpha
		case "b", "beta":
			v.preKind = preBeta
		default: // rc, c, pre, preview
			v.preKind = preRC
		}
		v.preNum = n
	}
	return nil
}

// Compare returns -1, 0 or +1 as a is older than, the same as, or newer
// than b.
func Compare(a, b Version) int {
	for i := 0; i < len(a.release) || i < len(b.release); i++ {
		if c := cmpInt(part(a.release, i), part(b.release, i)); c != 0 {
			return c
		}
	}
	if c := cmpInt(a.preKey(), b.preKey()); c != 0 {
		return c
	}
	if c := cmpInt(a.preNum, b.preNum); c != 0 && a.preKind != preNone {
		return c
	}
	if c := cmpInt(a.post, b.post); c != 0 {
		return c
	}
	return cmpInt(devKey(a.dev), devKey(b.dev))
}

// preKey orders the pre-release kind; a final release sorts after every
// pre-release, except a dev-release of it (1.0.dev1), which sorts first.
func (v Version) preKey() int {
	switch {
	case v.preKind != preNone:
		return v.preKind
	case v.post < 0 && v.dev >= 0:
		return -1
	}
	return preRC + 1
}

// devKey puts a dev-release before the release it leads to.
func devKey(dev int) int {
	if dev < 0 {
		return int(^uint(0) >> 1)
	}
	return dev
}

func part(r []int, i int) int {
	if i < len(r) {
		return r[i]
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
