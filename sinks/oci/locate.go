package oci

import (
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
)

// Locate implements sinks.Locator: for each image of v that Export pushes
// to (v.Images, chosen and deduplicated as Export does), the subject the
// BOM is a referrer of, registry/repository@digest in the repository the
// artifact goes to (the configured repository, or the image's own): the
// plain BOM artifact (ArtifactType) unless plainReferrer is false, and
// the signed attestation (signing.BundleMediaType) when attest is set. The
// referrer's own manifest digest depends on the subject's media type and
// size, which only the registry knows, so it is not named.
func (s *Sink) Locate(v sinks.Version) []sinks.Location {
	if !v.HasBOM() {
		return nil
	}
	var locs []sinks.Location
	for _, t := range s.targets(v.Images, nil) {
		where := t.dest.Registry + "/" + t.dest.Repository + "@" + t.digest.String()
		if s.plain {
			locs = append(locs, sinks.Location{Sink: s.name, Type: Type, What: "referrer", Where: where, ArtifactType: ArtifactType})
		}
		if s.signer != nil {
			locs = append(locs, sinks.Location{Sink: s.name, Type: Type, What: "attestation", Where: where, ArtifactType: signing.BundleMediaType})
		}
	}
	return locs
}
