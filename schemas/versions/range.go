package versions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Range is a runtime name with version constraints, all of which must
// hold: "sglang>=0.4,<0.5".
type Range struct {
	// Runtime is the runtime's name as BOMs carry it (vllm, sglang, tgi,
	// ...), lower case.
	Runtime     string
	Constraints []Constraint
	text        string
}

// Constraint is one operator and version.
type Constraint struct {
	Op      string // <, <=, >, >=, ==, !=
	Version Version
}

// String is the range as it was written.
func (r Range) String() string { return r.text }

var (
	runtimeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	constraint  = regexp.MustCompile(`^(<=|>=|==|!=|<|>|=)\s*(\S+)$`)
)

// ParseRange reads "NAME", "NAMEopVERSION" or "NAMEopVERSION,opVERSION...".
// The error names the part at fault: the runtime name, an operator, or a
// version that is not one.
func ParseRange(s string) (Range, error) {
	r := Range{text: s}
	text := strings.TrimSpace(s)
	cut := strings.IndexAny(text, "<>=!~")
	name := text
	if cut >= 0 {
		name = text[:cut]
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if !runtimeName.MatchString(name) {
		return r, fmt.Errorf("range %q: runtime name %q is not a name such as vllm or sglang", s, name)
	}
	r.Runtime = name
	if cut < 0 {
		return r, nil
	}
	for part := range strings.SplitSeq(text[cut:], ",") {
		part = strings.TrimSpace(part)
		m := constraint.FindStringSubmatch(part)
		if m == nil {
			return r, fmt.Errorf("range %q: constraint %q is not an operator (< <= > >= == !=) and a version", s, part)
		}
		v, err := parseBound(m[2])
		if err != nil {
			return r, fmt.Errorf("range %q: constraint %q: %w", s, part, err)
		}
		op := m[1]
		if op == "=" {
			op = "=="
		}
		r.Constraints = append(r.Constraints, Constraint{Op: op, Version: v})
	}
	return r, nil
}

// Contains reports whether a runtime called name, at version, is in the
// range. A version that does not parse is never in a range that has
// constraints (see the package comment).
func (r Range) Contains(name, version string) bool {
	v, err := Parse(version)
	return r.Admits(name, v, err == nil)
}

// Admits is Contains for a version parsed beforehand: parsed says whether
// Parse read it (an index parses each distinct version once).
func (r Range) Admits(name string, v Version, parsed bool) bool {
	if !strings.EqualFold(name, r.Runtime) {
		return false
	}
	if len(r.Constraints) == 0 {
		return true
	}
	if !parsed {
		return false
	}
	for _, c := range r.Constraints {
		if !c.holds(v) {
			return false
		}
	}
	return true
}

func (c Constraint) holds(v Version) bool {
	n := Compare(v, c.Version)
	switch c.Op {
	case "<":
		return n < 0
	case "<=":
		return n <= 0
	case ">":
		return n > 0
	case ">=":
		return n >= 0
	case "==":
		return n == 0
	case "!=":
		return n != 0
	}
	return false
}

// parseBound is Parse, and also takes a bare major version (vllm>=1),
// which as a tag is no version.
func parseBound(s string) (Version, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return Version{release: []int{n}, post: -1, dev: -1, text: s}, nil
	}
	return Parse(s)
}
