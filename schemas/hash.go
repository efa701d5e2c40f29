package schemas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// CanonicalJSON encodes v as compact JSON with no HTML escaping and no trailing
// newline. Struct fields keep their declared order and map keys are sorted, so
// equal values always give equal bytes.
func CanonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// InputHash is "sha256:<hex>" of the canonical JSON of in. It changes exactly
// when something the BOM would show changes.
func InputHash(in *Inputs) (string, error) {
	if in == nil {
		return "", fmt.Errorf("input hash: nil inputs")
	}
	b, err := CanonicalJSON(in)
	if err != nil {
		return "", fmt.Errorf("input hash: %w", err)
	}
	return digest(b), nil
}

// BomHash is "sha256:<hex>" of the rendered BOM bytes.
func BomHash(bom []byte) string { return digest(bom) }

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
