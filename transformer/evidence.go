package transformer

import (
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// evidenceParts is what the pointers of one component's evidence point
// to (see componentParts).
type evidenceParts struct {
	e        cdx.Evidence
	choice   cdx.EvidenceIdentityChoice
	idArr    [2]cdx.EvidenceIdentity
	ids      []cdx.EvidenceIdentity
	methods  []cdx.EvidenceIdentityMethod
	vArr     [1]cdx.EvidenceIdentityMethod
	vMethods []cdx.EvidenceIdentityMethod
	occ      []cdx.EvidenceOccurrence
}

// evidence turns proofs into CycloneDX 1.6 component evidence, in x: one
// identity for the name (every method that named it, the strongest
// first), one for the version, and the locators as occurrences, sorted. A
// shrunk BOM lists at most evidenceCap methods and occurrences. It sorts
// ps.
func (b *bomBuilder) evidence(x *evidenceParts, ps proofs, conf string, v versionClaim) *cdx.Evidence {
	if len(ps) == 0 {
		return nil
	}
	x.occ = occurrences(x.occ[:0], ps)
	x.methods = b.identityMethods(x.methods[:0], ps)
	if c := b.evidenceCap; c > 0 {
		x.methods, x.occ = x.methods[:min(len(x.methods), c)], x.occ[:min(len(x.occ), c)]
	}
	x.idArr[0] = cdx.EvidenceIdentity{Field: cdx.EvidenceIdentityFieldTypeName, Confidence: b.score(conf), Methods: &x.methods}
	x.ids = x.idArr[:1]
	if v.version != "" {
		x.vArr[0] = cdx.EvidenceIdentityMethod{Technique: technique, Confidence: b.score(v.proof.conf), Value: v.proof.value}
		x.vMethods = x.vArr[:]
		x.idArr[1] = cdx.EvidenceIdentity{
			Field: cdx.EvidenceIdentityFieldTypeVersion, Confidence: b.score(v.proof.conf), ConcludedValue: v.version,
			Methods: &x.vMethods,
		}
		x.ids = x.idArr[:2]
	}
	x.choice = cdx.EvidenceIdentityChoice{Identities: &x.ids}
	x.e = cdx.Evidence{Identity: &x.choice}
	if len(x.occ) > 0 {
		x.e.Occurrences = &x.occ
	}
	return &x.e
}

// identityMethods appends to methods the values of ps, strongest first,
// then in value order; a value seen at two confidences keeps the
// strongest. It sorts ps by confidence, strongest first, then value.
func (b *bomBuilder) identityMethods(methods []cdx.EvidenceIdentityMethod, ps proofs) []cdx.EvidenceIdentityMethod {
	slices.SortFunc(ps, func(x, y proof) int {
		if c := confRank(y.conf) - confRank(x.conf); c != 0 {
			return c
		}
		return strings.Compare(x.value, y.value)
	})
	bounds, n := confGroups(ps)
	methods = slices.Grow(methods, len(ps))
	for g := range n {
		group := ps[bounds[g]:bounds[g+1]]
		for i := range group {
			v := group[i].value
			if i > 0 && v == group[i-1].value || inGroups(ps, bounds[:g+1], v) {
				continue
			}
			methods = append(methods, cdx.EvidenceIdentityMethod{Technique: technique, Confidence: b.score(group[i].conf), Value: v})
		}
	}
	return methods
}

// confGroups splits ps, sorted by confidence (strongest first) then value,
// into its runs of one confidence, at most four (see confRank): run g is
// ps[bounds[g]:bounds[g+1]].
func confGroups(ps proofs) (bounds [5]int, n int) {
	for i := range ps {
		if i == 0 || confRank(ps[i].conf) != confRank(ps[i-1].conf) {
			bounds[n] = i
			n++
		}
	}
	bounds[n] = len(ps)
	return bounds, n
}

// inGroups reports whether value is in one of the runs of ps that bounds
// delimits (see confGroups), each sorted by value.
func inGroups(ps proofs, bounds []int, value string) bool {
	for g := 0; g+1 < len(bounds); g++ {
		if _, ok := slices.BinarySearchFunc(ps[bounds[g]:bounds[g+1]], value, proofValueCmp); ok {
			return true
		}
	}
	return false
}

// proofValueCmp compares the value of p with v.
func proofValueCmp(p proof, v string) int { return strings.Compare(p.value, v) }

// occurrences appends to occ the locators of ps, sorted and without
// repeats. It sorts ps by locator.
func occurrences(occ []cdx.EvidenceOccurrence, ps proofs) []cdx.EvidenceOccurrence {
	slices.SortFunc(ps, func(x, y proof) int { return strings.Compare(x.locator, y.locator) })
	occ = slices.Grow(occ, len(ps))
	for i := range ps {
		if ps[i].locator != "" && (i == 0 || ps[i].locator != ps[i-1].locator) {
			occ = append(occ, cdx.EvidenceOccurrence{Location: ps[i].locator})
		}
	}
	return occ
}

// score is the CycloneDX confidence of a claim's: 1 declared, 0.6 inferred,
// 0.2 unresolved. It points into b.scores, which nothing writes through.
func (b *bomBuilder) score(conf string) *float32 {
	switch conf {
	case confDeclared:
		return &b.scores[2]
	case confInferred:
		return &b.scores[1]
	}
	return &b.scores[0]
}

// sortProps orders properties by name then value, and drops exact
// duplicates; it stores them in *dst, which it returns, nil when there are
// none.
func sortProps(dst *[]cdx.Property, ps []cdx.Property) *[]cdx.Property {
	if len(ps) == 0 {
		return nil
	}
	slices.SortFunc(ps, func(a, b cdx.Property) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	*dst = slices.Compact(ps)
	return dst
}
