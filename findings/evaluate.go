package findings

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Finding is one finding a BOM shows: a rule broken by a subject of the
// BOM (a model id, an image reference, a runtime name).
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Subject  string `json:"subject"`
	Message  string `json:"message"`
}

// Evaluate applies the rules to the facts of one BOM. It is a pure
// function: the same rules and facts give the same findings, sorted by
// rule and subject, one per (rule, subject) (their messages joined).
func (r *Rules) Evaluate(f Facts) []Finding {
	out := make([]Finding, 0, 2*len(f.Models)+len(f.Images)+len(f.Runtimes))
	add := func(rule Rule, subject, msg string) {
		for i := range out {
			if out[i].Rule == rule.ID && out[i].Subject == subject {
				if !strings.Contains(out[i].Message, msg) {
					out[i].Message += "; " + msg
				}
				return
			}
		}
		out = append(out, Finding{Rule: rule.ID, Severity: rule.Severity, Subject: subject, Message: msg})
	}
	for _, rule := range r.List {
		switch rule.Check {
		case CheckModelUnpinned:
			for _, m := range f.Models {
				if !m.Pinned {
					add(rule, m.Name, "model "+m.Name+" has no pinned revision or digest")
				}
			}
		case CheckModelSource:
			for _, m := range f.Models {
				if org := organisation(m); org != "" && len(rule.Organisations) > 0 && !anyGlob(rule.Organisations, org) {
					add(rule, m.Name, "model "+m.Name+" is from organisation "+org+", outside the allow-list")
				}
				if reg := registry(m); len(rule.Registries) > 0 && !anyGlob(rule.Registries, reg) {
					add(rule, m.Name, "model "+m.Name+" comes from "+cmp.Or(reg, "an unknown registry")+", outside the allow-list")
				}
			}
		case CheckRuntimeVersion:
			for _, rt := range f.Runtimes {
				r.runtimeVersion(rule, rt, add)
			}
		case CheckImageDigest:
			for _, img := range f.Images {
				if len(img.Digests) == 0 {
					add(rule, img.Ref, "image "+img.Ref+" has no resolved digest")
				}
			}
		case CheckRuntimeInferred:
			for _, rt := range f.Runtimes {
				if rt.Confidence == "inferred" {
					add(rule, rt.Name, "runtime "+rt.Name+" is only inferred from its image")
				}
			}
		case CheckModelLicense:
			for _, m := range f.Models {
				if !m.Licensed {
					add(rule, m.Name, "model "+m.Name+": the BOM names no license")
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Subject, b.Subject))
	})
	return out
}

// runtimeVersion checks one runtime against the rule's minimums and deny
// ranges. A version that cannot be compared is a finding of the rule: it
// never passes silently.
func (r *Rules) runtimeVersion(rule Rule, rt Runtime, add func(Rule, string, string)) {
	for _, c := range rule.versions {
		in, err := r.match(rt.Name, rt.Version, c.expr)
		switch {
		case err != nil:
			add(rule, rt.Name, fmt.Sprintf("runtime %s version %q cannot be checked against %s: %v", rt.Name, rt.Version, c.expr, err))
		case in:
			add(rule, rt.Name, "runtime "+rt.Name+" "+rt.Version+" is "+c.what)
		}
	}
}

// versionCheck is one range a runtime-version rule checks a runtime
// against, and what being in it means.
type versionCheck struct{ expr, what string }

// versionChecks are a runtime-version rule's ranges, in the order its
// findings' messages name them: the minimums by runtime name, then the
// deny ranges. They are built once, when the rules are read.
func versionChecks(minimum map[string]string, deny []string) []versionCheck {
	var checks []versionCheck
	for _, name := range sortedKeys(minimum) {
		checks = append(checks, versionCheck{name + "<" + minimum[name], "below the minimum " + minimum[name]})
	}
	for _, d := range deny {
		checks = append(checks, versionCheck{d, "inside the deny range " + d})
	}
	return checks
}

func anyGlob(globs []string, s string) bool {
	return slices.ContainsFunc(globs, func(g string) bool {
		ok, _ := path.Match(g, s) // checked when the rules were read
		return ok
	})
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
