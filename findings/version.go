package findings

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bomstream/bomstream/schemas/versions"
)

// VersionMatcher reports whether the version of the runtime called runtime
// lies in rangeExpr: "<runtime><op><version>[,<op><version>]...", ops <,
// <=, >, >=, ==, != ("vllm<0.8.5", "sglang>=0.4,<0.5"). A range naming
// another runtime is (false, nil). A malformed rangeExpr is an error
// wrapping ErrBadRange whatever runtime and version are (ParseRules checks
// a rules file's ranges by calling it with both empty); a version it cannot
// compare is an error wrapping ErrUnparsableVersion, never a silent true or
// false. It must be safe for concurrent use.
//
// DefaultVersionMatcher is the one used unless another is given; the
// inventory's version ranges can be plugged in here.
type VersionMatcher func(runtime, version, rangeExpr string) (bool, error)

var (
	// ErrBadRange: a range expression that cannot be read.
	ErrBadRange = errors.New("malformed version range")
	// ErrUnparsableVersion: a runtime version that cannot be compared.
	ErrUnparsableVersion = errors.New("unparsable version")
)

// DefaultVersionMatcher is the inventory's version ranges
// (schemas/versions, the ranges `bomstream find --runtime` takes):
// versions as imageref.ParseVersion reads them from tags and fields (a
// "v" prefix and a variant such as -cu126 are dropped), ordered as PEP 440
// orders releases (0.5.0.dev1 < 0.5.0a1 < 0.5.0b1 < 0.5.0rc1 < 0.5.0 <
// 0.5.0.post1; a semver pre-release is a PEP 440 one; missing release parts
// are zeros). Tags that are not versions (latest, a date) do not parse,
// and say so.
func DefaultVersionMatcher(runtime, version, rangeExpr string) (bool, error) {
	r, err := parseRange(rangeExpr)
	if err != nil {
		return false, err
	}
	return matchRange(r, runtime, version)
}

// parseRange reads a range for DefaultVersionMatcher.
func parseRange(rangeExpr string) (versions.Range, error) {
	r, err := versions.ParseRange(rangeExpr)
	if err != nil {
		return r, fmt.Errorf("%w: %w", ErrBadRange, err)
	}
	if len(r.Constraints) == 0 {
		return r, fmt.Errorf("%w: range %q: no version constraint", ErrBadRange, rangeExpr)
	}
	return r, nil
}

func matchRange(r versions.Range, runtime, version string) (bool, error) {
	if !strings.EqualFold(r.Runtime, runtime) {
		return false, nil
	}
	v, err := versions.Parse(version)
	return admits(r, runtime, version, v, err)
}

// admits is matchRange for a version already read (v, or the error
// reading it gave).
func admits(r versions.Range, runtime, version string, v versions.Version, err error) (bool, error) {
	if !strings.EqualFold(r.Runtime, runtime) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s version %q: %w", runtime, version, ErrUnparsableVersion)
	}
	return r.Admits(runtime, v, true), nil
}

// defaultMatcher is DefaultVersionMatcher reading each range and each
// version once: one Rules checks the same few ranges for every BOM, and
// a fleet runs few versions of its runtimes.
func defaultMatcher() VersionMatcher {
	type parsedRange struct {
		r   versions.Range
		err error
	}
	type parsedVersion struct {
		v   versions.Version
		err error
	}
	var mu sync.Mutex
	ranges := map[string]parsedRange{}
	vers := map[string]parsedVersion{}
	return func(runtime, version, rangeExpr string) (bool, error) {
		mu.Lock()
		p, ok := ranges[rangeExpr]
		if !ok {
			p.r, p.err = parseRange(rangeExpr)
			if len(ranges) < 1024 { // the rules' ranges, and more only from a caller's mistake
				ranges[rangeExpr] = p
			}
		}
		v, ok := vers[version]
		if !ok && p.err == nil && strings.EqualFold(p.r.Runtime, runtime) {
			v.v, v.err = versions.Parse(version)
			if len(vers) < 4096 { // beyond, each is read again
				vers[version] = v
			}
		}
		mu.Unlock()
		if p.err != nil {
			return false, p.err
		}
		return admits(p.r, runtime, version, v.v, v.err)
	}
}
