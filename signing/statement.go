package signing

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// In-toto and CycloneDX names of an AI-BOM attestation.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType is what `cosign attest --type cyclonedx` writes and
	// `cosign verify-attestation --type cyclonedx` and Kyverno look for.
	PredicateType = "https://cyclonedx.org/bom"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
)

// Subject is what an attestation is about: an image manifest (name the
// repository, digest the manifest's) or a BOM object (its name, the
// digest of its bytes).
type Subject struct {
	Name   string
	Digest string // "sha256:<hex>"
}

type statement struct {
	Type          string          `json:"_type"`
	Subject       []subjectJSON   `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

type subjectJSON struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement returns the in-toto statement that bom (CycloneDX JSON) is the
// bill of materials of sub. The same inputs give the same bytes.
func Statement(sub Subject, bom []byte) ([]byte, error) {
	return StatementOf(sub, PredicateType, bom)
}

// StatementOf returns the in-toto statement about sub with any predicate
// (JSON) of predicateType: the image builder's SLSA provenance. The same
// inputs give the same bytes.
func StatementOf(sub Subject, predicateType string, predicate []byte) ([]byte, error) {
	hexDigest, ok := strings.CutPrefix(sub.Digest, "sha256:")
	if _, err := hex.DecodeString(hexDigest); !ok || err != nil || len(hexDigest) != 64 {
		return nil, fmt.Errorf("statement for %s: digest %q is not sha256:<hex>", sub.Name, sub.Digest)
	}
	if predicateType == "" {
		return nil, fmt.Errorf("statement for %s: no predicate type", sub.Name)
	}
	if !json.Valid(predicate) {
		return nil, fmt.Errorf("statement for %s: the %s predicate is not JSON", sub.Name, predicateType)
	}
	// Without HTML escaping, the predicate is the input compacted, byte
	// for byte: json.Marshal would write a purl's '&' as \u0026, and the
	// attested BOM would no longer equal the compacted file (VerifyBlob).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(statement{
		Type:          StatementType,
		Subject:       []subjectJSON{{Name: sub.Name, Digest: map[string]string{"sha256": hexDigest}}},
		PredicateType: predicateType,
		Predicate:     predicate,
	}); err != nil {
		return nil, fmt.Errorf("statement for %s: %w", sub.Name, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
