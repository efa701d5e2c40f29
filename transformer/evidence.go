package transformer

import (
	"cmp"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// evidenceParts is one component's evidence, allocated at once: the
// pointers of e point into it.
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

// evidence turns proofs into CycloneDX 1.6 component evidence: one identity
// for the name (every method that named it, the strongest first), one for
// the version, and the locators as occurrences, sorted. A shrunk BOM lists
// at most evidenceCap methods and occurrences. It sorts ps.
func (b *bomBuilder) evidence(ps proofs, conf string, v versionClaim) *cdx.Evidence {
	if len(ps) == 0 {
		return nil
	}
	x := &evidenceParts{methods: b.identityMethods(ps), occ: occurrences(ps)}
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
	x.choice.Identities = &x.ids
	x.e.Identity = &x.choice
	if len(x.occ) > 0 {
		x.e.Occurrences = &x.occ
	}
	return &x.e
}

// identityMethods are the values of ps, strongest first, then in value
// order; a value seen at two confidences keeps the strongest. It sorts ps
// by value.
func (b *bomBuilder) identityMethods(ps proofs) []cdx.EvidenceIdentityMethod {
	slices.SortFunc(ps, func(x, y proof) int {
		return cmp.Or(strings.Compare(x.value, y.value), confRank(y.conf)-confRank(x.conf))
	})
	var strongest []int // the first, strongest, proof of each value
	for i := range ps {
		if i == 0 || ps[i].value != ps[i-1].value {
			strongest = append(strongest, i)
		}
	}
	slices.SortFunc(strongest, func(i, j int) int {
		return cmp.Or(confRank(ps[j].conf)-confRank(ps[i].conf), strings.Compare(ps[i].value, ps[j].value))
	})
	methods := make([]cdx.EvidenceIdentityMethod, len(strongest))
	for k, i := range strongest {
		methods[k] = cdx.EvidenceIdentityMethod{Technique: technique, Confidence: b.score(ps[i].conf), Value: ps[i].value}
	}
	return methods
}

// occurrences are the locators of ps, sorted and without repeats.
func occurrences(ps proofs) []cdx.EvidenceOccurrence {
	locs := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.locator != "" {
			locs = append(locs, p.locator)
		}
	}
	if len(locs) == 0 {
		return nil
	}
	slices.Sort(locs)
	locs = slices.Compact(locs)
	occ := make([]cdx.EvidenceOccurrence, len(locs))
	for i, l := range locs {
		occ[i].Location = l
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
// duplicates; nil when there are none.
func sortProps(ps []cdx.Property) *[]cdx.Property {
	if len(ps) == 0 {
		return nil
	}
	slices.SortFunc(ps, func(a, b cdx.Property) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Value, b.Value))
	})
	ps = slices.Compact(ps)
	return &ps
}
