package findings

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/schemas"
)

// ruleFile is the YAML shape of a findings rules file, decoded by
// config.Decode.
type ruleFile struct {
	Rules []ruleSpec `yaml:"rules"`
}

// ruleSpec is one rule as written: every check's parameters, and in Other
// the keys no check takes, which parseRule reports with the check's own.
type ruleSpec struct {
	ID            string            `yaml:"id"`
	Check         string            `yaml:"check"`
	Severity      string            `yaml:"severity"`
	Enabled       *bool             `yaml:"enabled"`
	Organisations []string          `yaml:"organisations"`
	Registries    []string          `yaml:"registries"`
	Minimum       map[string]string `yaml:"minimum"`
	Deny          []string          `yaml:"deny"`
	Other         map[string]any    `yaml:",inline"`
}

// ParseRules reads a rules file's bytes; source names it in errors. Every
// problem is reported, each naming the file, the rule (its id, its index
// and line) and the field at fault. Rules with enabled: false are checked,
// then left out. match (nil: DefaultVersionMatcher) checks the version
// ranges and is kept for Evaluate.
func ParseRules(source string, b []byte, match VersionMatcher) (*Rules, error) {
	if match == nil {
		match = defaultMatcher()
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("findings rules file %s: "+format, append([]any{source}, a...)...)
	}
	var file ruleFile
	lines, err := config.Decode(b, &file)
	if lines == nil {
		return nil, fail("%w", err) // not YAML
	}
	var errs []error
	if err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fail("%w", e))
		}
	}
	if _, ok := lines["rules"]; !ok {
		return nil, errors.Join(append(errs, fail("no rules list"))...)
	}
	rules := &Rules{Source: source, match: match}
	seen := map[string]int{}
	for i, spec := range file.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		r, enabled, ferrs := parseRule(spec, at, lines, match)
		name := fmt.Sprintf("rule %q (%s, line %d)", r.ID, at, lines[at])
		if prev, dup := seen[r.ID]; dup && r.ID != "" {
			ferrs = append(ferrs, fmt.Errorf("field id: %q is used by rules[%d] too", r.ID, prev))
		}
		seen[r.ID] = i
		for _, e := range ferrs {
			errs = append(errs, fail("%s: %w", name, e))
		}
		if len(ferrs) == 0 && enabled {
			rules.List = append(rules.List, r)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

// unjoin is the errors err joins, or err.
func unjoin(err error) []error {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		return j.Unwrap()
	}
	return []error{err}
}

var runtimeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// parseRule checks one rule, the one at path at in lines, reporting each
// field at fault with its line.
func parseRule(spec ruleSpec, at string, lines config.Lines, match VersionMatcher) (r Rule, enabled bool, errs []error) {
	bad := func(field string, format string, a ...any) {
		line, ok := lines[at+"."+field]
		if !ok {
			line = lines[at]
		}
		errs = append(errs, fmt.Errorf("field %s (line %d): %s", field, line, fmt.Sprintf(format, a...)))
	}
	r.ID, r.Check, r.Severity = spec.ID, spec.Check, spec.Severity
	enabled = spec.Enabled == nil || *spec.Enabled
	switch {
	case r.ID == "":
		bad("id", "missing")
	case !schemas.ValidFindingRule(r.ID):
		bad("id", "%q is not 1-63 characters of [a-z0-9-]", r.ID)
	}
	params, known := checkParams[r.Check]
	switch {
	case r.Check == "":
		bad("check", "missing (one of %s)", knownChecks())
	case !known:
		bad("check", "%q is not one of %s", r.Check, knownChecks())
	}
	if r.Severity == "" {
		bad("severity", "missing (one of %s)", strings.Join(Severities, ", "))
	} else if !ValidSeverity(r.Severity) {
		bad("severity", "%q is not one of %s", r.Severity, strings.Join(Severities, ", "))
	}
	if known {
		for _, k := range paramKeys(spec, at, lines) {
			if !slices.Contains(params, k) {
				bad(k, "unknown for check %s (it takes: %s)", r.Check, orNone(params))
			}
		}
	}
	r.Organisations = globs(spec.Organisations, "organisations", bad)
	r.Registries = globs(spec.Registries, "registries", bad)
	r.Deny = strs(spec.Deny, "deny", bad)
	for i, expr := range r.Deny {
		if _, err := match("", "", expr); err != nil {
			bad(fmt.Sprintf("deny[%d]", i), "%v", err)
		}
	}
	r.Minimum = minimums(spec.Minimum, at, lines, match, bad)
	r.versions = versionChecks(r.Minimum, r.Deny)
	return r, enabled, errs
}

// paramKeys are the keys of the rule at path at beyond id, check,
// severity and enabled, in the order of the file.
func paramKeys(spec ruleSpec, at string, lines config.Lines) []string {
	keys := slices.Collect(maps.Keys(spec.Other))
	for _, k := range []string{"organisations", "registries", "minimum", "deny"} {
		if _, ok := lines[at+"."+k]; ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(lines[at+"."+a], lines[at+"."+b]), strings.Compare(a, b))
	})
	return keys
}

// minimums checks the minimum mapping: runtime name to version.
func minimums(m map[string]string, at string, lines config.Lines, match VersionMatcher, bad func(string, string, ...any)) map[string]string {
	if m == nil {
		return nil
	}
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(lines[at+".minimum."+a], lines[at+".minimum."+b]), strings.Compare(a, b))
	})
	out := map[string]string{}
	for _, name := range names {
		v, field := m[name], "minimum."+name
		switch {
		case !runtimeName.MatchString(name):
			bad(field, "%q is not a runtime name (lower case, as in the BOM's bomstream:runtime:name)", name)
		case v == "":
			bad(field, "not a version")
		default:
			if _, err := match("", "", name+"<"+v); err != nil {
				bad(field, "%v", err)
			}
			out[name] = v
		}
	}
	return out
}

// strs is the strings of a list, each checked to be non-empty.
func strs(list []string, field string, bad func(string, string, ...any)) []string {
	var out []string
	for i, e := range list {
		if e == "" {
			bad(fmt.Sprintf("%s[%d]", field, i), "not a non-empty string")
			continue
		}
		out = append(out, e)
	}
	return out
}

func globs(list []string, field string, bad func(string, string, ...any)) []string {
	out := strs(list, field, bad)
	for i, g := range out {
		if _, err := path.Match(g, ""); err != nil {
			bad(fmt.Sprintf("%s[%d]", field, i), "%q: %v", g, err)
		}
	}
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "no parameters"
	}
	return strings.Join(xs, ", ")
}
