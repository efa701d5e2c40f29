package findings

import (
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// The checks a rule can make; see docs/findings.md.
const (
	CheckModelUnpinned   = "model-unpinned"   // a model without a pinned revision or digest
	CheckModelSource     = "model-source"     // a model from an organisation or registry outside the allow-lists
	CheckRuntimeVersion  = "runtime-version"  // a runtime below a minimum version or inside a deny range
	CheckImageDigest     = "image-digest"     // an image without a resolved digest
	CheckRuntimeInferred = "runtime-inferred" // a runtime known only from its image
	CheckModelLicense    = "model-license"    // a model whose BOM names no license
)

// checkParams are the parameters each check accepts, besides id, check,
// severity and enabled.
var checkParams = map[string][]string{
	CheckModelUnpinned:   nil,
	CheckModelSource:     {"organisations", "registries"},
	CheckRuntimeVersion:  {"minimum", "deny"},
	CheckImageDigest:     nil,
	CheckRuntimeInferred: nil,
	CheckModelLicense:    nil,
}

// Severities, from the least to the most severe (schemas.FindingSeverities:
// the read side checks its filters against them too).
var Severities = schemas.FindingSeverities

// Rule is one rule of a rules file.
type Rule struct {
	ID       string
	Check    string
	Severity string
	// Of model-source: the allowed Hugging Face organisations and the
	// allowed registries (globs, path.Match); empty allows any.
	Organisations []string
	Registries    []string
	// Of runtime-version: the minimum version per runtime name, and the
	// ranges no runtime may be in ("vllm>=0.5,<0.5.5").
	Minimum map[string]string
	Deny    []string

	versions []versionCheck // Minimum and Deny, as Evaluate checks them
}

// Rules is a policy: the enabled rules of a file, in file order.
type Rules struct {
	// Source names the file the rules come from ("(defaults)" for the
	// embedded ones).
	Source string
	List   []Rule
	match  VersionMatcher
}

//go:embed rules.yaml
var defaultRules []byte

// DefaultRulesSource is the Source of the embedded default rules.
const DefaultRulesSource = "(defaults)"

// DefaultRulesYAML returns the embedded default rules file, to print or
// copy.
func DefaultRulesYAML() []byte { return slices.Clone(defaultRules) }

// DefaultRules returns the embedded default rules, checked with match
// (nil: DefaultVersionMatcher).
func DefaultRules(match VersionMatcher) (*Rules, error) {
	return ParseRules(DefaultRulesSource, defaultRules, match)
}

// LoadRules reads the rules file at path; "" gives the defaults. Errors
// name the file, the rule and the field at fault.
func LoadRules(path string, match VersionMatcher) (*Rules, error) {
	if path == "" {
		return DefaultRules(match)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("findings rules file: %w", err)
	}
	return ParseRules(path, b, match)
}

// Rule returns the rule called id.
func (r *Rules) Rule(id string) (Rule, bool) {
	for _, x := range r.List {
		if x.ID == id {
			return x, true
		}
	}
	return Rule{}, false
}

// IDs are the ids of the rules, in file order.
func (r *Rules) IDs() []string {
	out := make([]string, len(r.List))
	for i, x := range r.List {
		out[i] = x.ID
	}
	return out
}

// ValidSeverity reports whether s is one of Severities.
func ValidSeverity(s string) bool { return schemas.ValidFindingSeverity(s) }

// knownChecks lists the checks for an error message.
func knownChecks() string {
	var ks []string
	for k := range checkParams {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}
