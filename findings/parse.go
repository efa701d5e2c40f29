package findings

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bomstream/bomstream/schemas"
)

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
		return fmt.Errorf("findings rules file %s: %s", source, fmt.Sprintf(format, a...))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fail("%v", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail("not a mapping with a rules list")
	}
	root := doc.Content[0]
	var list *yaml.Node
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value == "rules" {
			list = root.Content[i+1]
		} else {
			errs = append(errs, fail("line %d: unknown field %q (known: rules)", k.Line, k.Value))
		}
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, errors.Join(append(errs, fail("no rules list"))...)
	}
	rules := &Rules{Source: source, match: match}
	seen := map[string]int{}
	for i, n := range list.Content {
		r, enabled, ferrs := parseRule(n, match)
		name := fmt.Sprintf("rule %q (rules[%d], line %d)", r.ID, i, n.Line)
		if prev, dup := seen[r.ID]; dup && r.ID != "" {
			ferrs = append(ferrs, fmt.Errorf("field id: %q is used by rules[%d] too", r.ID, prev))
		}
		seen[r.ID] = i
		for _, e := range ferrs {
			errs = append(errs, fail("%s: %v", name, e))
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

var runtimeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// parseRule reads one rule, reporting each field at fault.
func parseRule(n *yaml.Node, match VersionMatcher) (r Rule, enabled bool, errs []error) {
	enabled = true
	bad := func(field string, line int, format string, a ...any) {
		errs = append(errs, fmt.Errorf("field %s (line %d): %s", field, line, fmt.Sprintf(format, a...)))
	}
	if n.Kind != yaml.MappingNode {
		return r, false, []error{errors.New("not a mapping")}
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		fields[n.Content[i].Value] = n.Content[i+1]
	}
	r.ID = scalar(fields["id"], "id", bad)
	r.Check = scalar(fields["check"], "check", bad)
	r.Severity = scalar(fields["severity"], "severity", bad)
	if v := fields["enabled"]; v != nil {
		if err := v.Decode(&enabled); err != nil {
			bad("enabled", v.Line, "%q is not true or false", v.Value)
		}
	}
	switch {
	case r.ID == "":
		bad("id", n.Line, "missing")
	case !schemas.ValidFindingRule(r.ID):
		bad("id", fields["id"].Line, "%q is not 1-63 characters of [a-z0-9-]", r.ID)
	}
	params, known := checkParams[r.Check]
	switch {
	case r.Check == "":
		bad("check", n.Line, "missing (one of %s)", knownChecks())
	case !known:
		bad("check", fields["check"].Line, "%q is not one of %s", r.Check, knownChecks())
	}
	if r.Severity == "" {
		bad("severity", n.Line, "missing (one of %s)", strings.Join(Severities, ", "))
	} else if !ValidSeverity(r.Severity) {
		bad("severity", fields["severity"].Line, "%q is not one of %s", r.Severity, strings.Join(Severities, ", "))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch k.Value {
		case "id", "check", "severity", "enabled":
			continue
		}
		if known && !slices.Contains(params, k.Value) {
			bad(k.Value, k.Line, "unknown for check %s (it takes: %s)", r.Check, orNone(params))
		}
	}
	r.Organisations = globs(fields["organisations"], "organisations", bad)
	r.Registries = globs(fields["registries"], "registries", bad)
	r.Deny = strs(fields["deny"], "deny", bad)
	for i, expr := range r.Deny {
		if _, err := match("", "", expr); err != nil {
			bad(fmt.Sprintf("deny[%d]", i), fields["deny"].Content[i].Line, "%v", err)
		}
	}
	r.Minimum = minimums(fields["minimum"], match, bad)
	r.versions = versionChecks(r.Minimum, r.Deny)
	return r, enabled, errs
}

// minimums reads the minimum mapping: runtime name to version.
func minimums(v *yaml.Node, match VersionMatcher, bad func(string, int, string, ...any)) map[string]string {
	if v == nil {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		bad("minimum", v.Line, "not a mapping of runtime name to version")
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		field := "minimum." + k.Value
		switch {
		case !runtimeName.MatchString(k.Value):
			bad(field, k.Line, "%q is not a runtime name (lower case, as in the BOM's bomstream:runtime:name)", k.Value)
		case val.Kind != yaml.ScalarNode || val.Value == "":
			bad(field, val.Line, "not a version")
		default:
			if _, err := match("", "", k.Value+"<"+val.Value); err != nil {
				bad(field, val.Line, "%v", err)
			}
			out[k.Value] = val.Value
		}
	}
	return out
}

func scalar(v *yaml.Node, field string, bad func(string, int, string, ...any)) string {
	if v == nil {
		return ""
	}
	if v.Kind != yaml.ScalarNode {
		bad(field, v.Line, "not a string")
		return ""
	}
	return v.Value
}

func strs(v *yaml.Node, field string, bad func(string, int, string, ...any)) []string {
	if v == nil {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		bad(field, v.Line, "not a list of strings")
		return nil
	}
	var out []string
	for i, e := range v.Content {
		if e.Kind != yaml.ScalarNode || e.Value == "" {
			bad(fmt.Sprintf("%s[%d]", field, i), e.Line, "not a non-empty string")
			continue
		}
		out = append(out, e.Value)
	}
	return out
}

func globs(v *yaml.Node, field string, bad func(string, int, string, ...any)) []string {
	out := strs(v, field, bad)
	for i, g := range out {
		if _, err := path.Match(g, ""); err != nil {
			bad(fmt.Sprintf("%s[%d]", field, i), v.Line, "%q: %v", g, err)
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
