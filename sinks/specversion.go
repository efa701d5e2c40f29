package sinks

import (
	"bytes"
	"context"
	"fmt"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// CycloneDX versions a sink may write (the specVersion of a sink's entry).
const (
	// Spec16 is what the transformer renders: the canonical document, whose
	// SHA-256 is the bomHash (docs/ARCHITECTURE.md).
	Spec16 = "1.6"
	// Spec17 is CycloneDX 1.7 (2025-10), converted from the canonical
	// document by cyclonedx-go's version-aware encoder.
	Spec17 = "1.7"
)

// ValidSpecVersion checks a sink's specVersion ("" is Spec16).
func ValidSpecVersion(v string) error {
	switch v {
	case "", Spec16, Spec17:
		return nil
	}
	return fmt.Errorf("specVersion %q: want %q or %q", v, Spec16, Spec17)
}

// ConvertSpec re-encodes a canonical (1.6) BOM as CycloneDX version v with
// cyclonedx-go. Spec16 (or "") returns body as it is. The result is
// deterministic: the same body gives the same bytes.
func ConvertSpec(body []byte, v string) ([]byte, error) {
	if v == "" || v == Spec16 {
		return body, nil
	}
	if v != Spec17 {
		return nil, ValidSpecVersion(v)
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(body), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("convert to CycloneDX %s: decode: %w", v, err)
	}
	var out bytes.Buffer
	enc := cdx.NewBOMEncoder(&out, cdx.BOMFileFormatJSON).SetEscapeHTML(false)
	if err := enc.EncodeVersion(&bom, cdx.SpecVersion1_7); err != nil {
		return nil, fmt.Errorf("convert to CycloneDX %s: encode: %w", v, err)
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// WithSpecVersion returns s writing CycloneDX version v: each BOM's Body is
// converted (ConvertSpec) before s sees it, while its BomHash stays the
// hash of the canonical document, so that the ledgers, the dedupe and every
// name built from the hash are the same whatever version a sink writes.
// Spec16 (or "") returns s. A BOM that cannot be converted is a permanent
// error (the same bytes never convert). The wrapper is a Checker and a
// Locator when s is.
func WithSpecVersion(s Sink, v string) Sink {
	if v == "" || v == Spec16 {
		return s
	}
	return withOptional(specSink{Sink: s, v: v}, s)
}

type specSink struct {
	Sink
	v string
}

func (s specSink) Export(ctx context.Context, b BOM) error {
	body, err := ConvertSpec(b.Body, s.v)
	if err != nil {
		return Permanent(fmt.Errorf("export %s: %w", b.Workload, err))
	}
	b.Body = body
	return s.Sink.Export(ctx, b)
}
