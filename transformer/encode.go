package transformer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// encode writes bom as cyclonedx-go's JSON encoder does: compact, without
// HTML escaping, with a trailing newline. These are the bytes BomHash
// hashes. appendBOM writes them, appending to dst[:0]; a BOM holding
// anything appendBOM does not cover goes to cyclonedx-go's encoder, which
// gives a new slice.
func encode(dst []byte, bom *cdx.BOM) ([]byte, error) {
	if b, ok := appendBOM(dst[:0], bom); ok {
		return b, nil
	}
	return encodeCDX(bom)
}

// encodeCDX writes bom with cyclonedx-go's encoder, as encode does.
func encodeCDX(bom *cdx.BOM) ([]byte, error) {
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(false).SetEscapeHTML(false)
	if err := enc.Encode(bom); err != nil {
		return nil, fmt.Errorf("cyclonedx json: %w", err)
	}
	return buf.Bytes(), nil
}

// appendBOM appends bom as JSON with the exact bytes of
//
//	cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(false).SetEscapeHTML(false).Encode(bom)
//
// trailing newline included, without reflection. It covers the fields that
// Render fills; it reports false for a BOM using any other field (or a value
// the reflective encoder would refuse), and the caller then uses the cdx
// encoder itself.
//
// The cdx types' MarshalJSON methods are reproduced: SpecVersion is its
// string, ToolsChoice is {"components":[...]} and EvidenceIdentityChoice the
// array of identities. Those methods call json.Marshal, which escapes <, >
// and & even though the outer encoder does not, so strings below them are
// written with HTML escaping (html true) and all others without.
func appendBOM(dst []byte, bom *cdx.BOM) ([]byte, bool) {
	if bom.SpecVersion < cdx.SpecVersion1_2 {
		return dst, false
	}
	rest := *bom
	rest.XMLName, rest.XMLNS = cdx.BOM{}.XMLName, "" // json:"-"
	rest.JSONSchema, rest.BOMFormat, rest.SpecVersion, rest.SerialNumber, rest.Version = "", "", 0, "", 0
	rest.Metadata, rest.Components, rest.Dependencies = nil, nil, nil
	if rest != (cdx.BOM{}) {
		return dst, false
	}
	b := append(dst, '{')
	if bom.JSONSchema != "" {
		b = append(b, `"$schema":`...)
		b = appendStr(b, bom.JSONSchema, false)
		b = append(b, ',')
	}
	b = append(b, `"bomFormat":`...)
	b = appendStr(b, bom.BOMFormat, false)
	b = append(b, `,"specVersion":`...)
	b = appendStr(b, bom.SpecVersion.String(), true)
	if bom.SerialNumber != "" {
		b = append(b, `,"serialNumber":`...)
		b = appendStr(b, bom.SerialNumber, false)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(bom.Version), 10)
	ok := true
	if bom.Metadata != nil {
		b = append(b, `,"metadata":`...)
		if b, ok = appendMetadata(b, bom.Metadata); !ok {
			return dst, false
		}
	}
	if bom.Components != nil {
		b = append(b, `,"components":`...)
		if b, ok = appendComponents(b, *bom.Components, false); !ok {
			return dst, false
		}
	}
	if bom.Dependencies != nil {
		b = append(b, `,"dependencies":`...)
		if b, ok = appendDependencies(b, *bom.Dependencies); !ok {
			return dst, false
		}
	}
	return append(b, '}', '\n'), true
}

// appendKey appends a member name, with the comma before it unless it is the
// first of its object.
func appendKey(b []byte, first *bool, k string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	return append(b, k...)
}

// appendMetadata appends the metadata: timestamp, tools (as components)
// and component.
func appendMetadata(b []byte, m *cdx.Metadata) ([]byte, bool) {
	rest := *m
	rest.Timestamp, rest.Tools, rest.Component = "", nil, nil
	if rest != (cdx.Metadata{}) {
		return b, false
	}
	b = append(b, '{')
	first, ok := true, true
	if m.Timestamp != "" {
		b = appendKey(b, &first, `"timestamp":`)
		b = appendStr(b, m.Timestamp, false)
	}
	if m.Tools != nil {
		// ToolsChoice.MarshalJSON: json.Marshal of {"components":[...]}.
		t := m.Tools
		if t.Tools != nil || t.Services != nil || t.Components == nil {
			return b, false
		}
		b = appendKey(b, &first, `"tools":{"components":`)
		if b, ok = appendComponents(b, *t.Components, true); !ok {
			return b, false
		}
		b = append(b, '}')
	}
	if m.Component != nil {
		b = appendKey(b, &first, `"component":`)
		if b, ok = appendComponent(b, m.Component, false); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendComponents appends a list of components; html escapes <, > and &
// (below a MarshalJSON method).
func appendComponents(b []byte, cs []cdx.Component, html bool) ([]byte, bool) {
	if cs == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	ok := true
	for i := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendComponent(b, &cs[i], html); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendComponent appends one component: the fields build fills.
func appendComponent(b []byte, c *cdx.Component, html bool) ([]byte, bool) {
	rest := *c
	rest.BOMRef, rest.Type, rest.Group, rest.Name, rest.Version = "", "", "", "", ""
	rest.Hashes, rest.PackageURL, rest.Properties, rest.Evidence = nil, "", nil, nil
	if rest != (cdx.Component{}) {
		return b, false
	}
	b = append(b, '{')
	if c.BOMRef != "" {
		b = append(b, `"bom-ref":`...)
		b = appendStr(b, c.BOMRef, html)
		b = append(b, ',')
	}
	b = append(b, `"type":`...)
	b = appendStr(b, string(c.Type), html)
	if c.Group != "" {
		b = append(b, `,"group":`...)
		b = appendStr(b, c.Group, html)
	}
	b = append(b, `,"name":`...)
	b = appendStr(b, c.Name, html)
	if c.Version != "" {
		b = append(b, `,"version":`...)
		b = appendStr(b, c.Version, html)
	}
	if c.Hashes != nil {
		b = append(b, `,"hashes":`...)
		b = appendHashes(b, *c.Hashes, html)
	}
	if c.PackageURL != "" {
		b = append(b, `,"purl":`...)
		b = appendStr(b, c.PackageURL, html)
	}
	if c.Properties != nil {
		b = append(b, `,"properties":`...)
		b = appendProperties(b, *c.Properties, html)
	}
	if c.Evidence != nil {
		b = append(b, `,"evidence":`...)
		ok := true
		if b, ok = appendEvidence(b, c.Evidence, html); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendHashes appends a component's hashes.
func appendHashes(b []byte, hs []cdx.Hash, html bool) []byte {
	if hs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"alg":`...)
		b = appendStr(b, string(hs[i].Algorithm), html)
		b = append(b, `,"content":`...)
		b = appendStr(b, hs[i].Value, html)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendProperties appends a component's properties.
func appendProperties(b []byte, ps []cdx.Property, html bool) []byte {
	if ps == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendStr(b, ps[i].Name, html)
		b = append(b, `,"value":`...)
		b = appendStr(b, ps[i].Value, html)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendEvidence appends a component's evidence: identities and
// occurrences.
func appendEvidence(b []byte, e *cdx.Evidence, html bool) ([]byte, bool) {
	if e.Callstack != nil || e.Licenses != nil || e.Copyright != nil {
		return b, false
	}
	b = append(b, '{')
	first, ok := true, true
	if e.Identity != nil {
		// EvidenceIdentityChoice.MarshalJSON: json.Marshal of the identities.
		ic := e.Identity
		if ic.Identity != nil || ic.Identities == nil {
			return b, false
		}
		b = appendKey(b, &first, `"identity":`)
		if b, ok = appendIdentities(b, *ic.Identities); !ok {
			return b, false
		}
	}
	if e.Occurrences != nil {
		b = appendKey(b, &first, `"occurrences":`)
		if b, ok = appendOccurrences(b, *e.Occurrences, html); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendIdentities: identities are always below a MarshalJSON method, so HTML
// is escaped.
func appendIdentities(b []byte, ids []cdx.EvidenceIdentity) ([]byte, bool) {
	if ids == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	ok := true
	for i := range ids {
		id := &ids[i]
		if id.Tools != nil {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		first := true
		if id.Field != "" {
			b = appendKey(b, &first, `"field":`)
			b = appendStr(b, string(id.Field), true)
		}
		if id.Confidence != nil {
			b = appendKey(b, &first, `"confidence":`)
			if b, ok = appendFloat32(b, *id.Confidence); !ok {
				return b, false
			}
		}
		if id.ConcludedValue != "" {
			b = appendKey(b, &first, `"concludedValue":`)
			b = appendStr(b, id.ConcludedValue, true)
		}
		if id.Methods != nil {
			b = appendKey(b, &first, `"methods":`)
			if b, ok = appendMethods(b, *id.Methods); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendMethods appends the methods of one identity; they are below a
// MarshalJSON method, so HTML is escaped.
func appendMethods(b []byte, ms []cdx.EvidenceIdentityMethod) ([]byte, bool) {
	if ms == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	ok := true
	for i := range ms {
		m := &ms[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		first := true
		if m.Technique != "" {
			b = appendKey(b, &first, `"technique":`)
			b = appendStr(b, string(m.Technique), true)
		}
		if m.Confidence != nil {
			b = appendKey(b, &first, `"confidence":`)
			if b, ok = appendFloat32(b, *m.Confidence); !ok {
				return b, false
			}
		}
		if m.Value != "" {
			b = appendKey(b, &first, `"value":`)
			b = appendStr(b, m.Value, true)
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendOccurrences appends the occurrences of one evidence.
func appendOccurrences(b []byte, occ []cdx.EvidenceOccurrence, html bool) ([]byte, bool) {
	if occ == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range occ {
		o := &occ[i]
		if o.Line != nil || o.Offset != nil || o.Symbol != "" || o.AdditionalContext != "" {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		first := true
		if o.BOMRef != "" {
			b = appendKey(b, &first, `"bom-ref":`)
			b = appendStr(b, o.BOMRef, html)
		}
		if o.Location != "" {
			b = appendKey(b, &first, `"location":`)
			b = appendStr(b, o.Location, html)
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendDependencies appends the dependency graph.
func appendDependencies(b []byte, ds []cdx.Dependency) ([]byte, bool) {
	if ds == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range ds {
		d := &ds[i]
		if d.Provides != nil {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"ref":`...)
		b = appendStr(b, d.Ref, false)
		if d.Dependencies != nil {
			b = append(b, `,"dependsOn":`...)
			if *d.Dependencies == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for k, s := range *d.Dependencies {
					if k > 0 {
						b = append(b, ',')
					}
					b = appendStr(b, s, false)
				}
				b = append(b, ']')
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendFloat32 appends f as encoding/json does for a float32 in plain
// notation; the exponent form (and NaN or Inf, which it refuses) are left to
// it.
func appendFloat32(b []byte, f float32) ([]byte, bool) {
	switch f {
	// The fixed confidence scores, formatted once.
	case 1:
		return append(b, '1'), true
	case 0.6:
		return append(b, "0.6"...), true
	case 0.2:
		return append(b, "0.2"...), true
	}
	abs := float32(math.Abs(float64(f)))
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return b, false
	}
	return strconv.AppendFloat(b, float64(f), 'f', -1, 32), true
}

// appendStr appends s as a JSON string. Plain printable ASCII is copied;
// anything else goes through encoding/json, so escapes are exactly its own.
func appendStr(b []byte, s string, html bool) []byte {
	if !plainJSON(s, html) {
		return appendJSONString(b, s, html)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON reports whether encoding/json would copy s into a string as is.
func plainJSON(s string, html bool) bool {
	need := byte(2) // safe in both modes
	if !html {
		need = 1 // <, > and & are safe too
	}
	i := 0
	for ; i+8 <= len(s); i += 8 { // eight bytes at a time
		c := s[i : i+8] // one load: the compiler merges the eight
		w := uint64(c[0]) | uint64(c[1])<<8 | uint64(c[2])<<16 | uint64(c[3])<<24 |
			uint64(c[4])<<32 | uint64(c[5])<<40 | uint64(c[6])<<48 | uint64(c[7])<<56
		bad := w&hiBits | hasLess(w, 0x20) | hasByte(w, '\\')
		if html {
			// '"' and '&' differ only in 0x04, '<' and '>' in 0x02.
			bad |= hasByte(w|loBits*0x04, '&') | hasByte(w|loBits*0x02, '>')
		} else {
			bad |= hasByte(w, '"')
		}
		if bad != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if jsonSafe[s[i]] < need {
			return false
		}
	}
	return true
}

// Bytes of a word: each test is non-zero exactly when some byte of x is
// as it says (the "has less" and "has zero" tricks of Bit Twiddling
// Hacks; exact for existence, with n at most 128).
const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

func hasLess(x uint64, n byte) uint64 { return (x - loBits*uint64(n)) &^ x & hiBits }
func hasByte(x uint64, c byte) uint64 { return hasLess(x^(loBits*uint64(c)), 1) }

// jsonSafe says, per byte, whether encoding/json copies it into a string as
// is: 0 never (controls, non-ASCII, quote, backslash), 1 only without HTML
// escaping (<, >, &), 2 always.
const jsonSafe = "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x02\x00\x02\x02\x02\x01\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x01\x02\x01\x02" +
	"\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x00\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// appendJSONString appends s as encoding/json writes it, HTML escaped or
// not: the slow path of appendStr.
func appendJSONString(dst []byte, s string, html bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}
