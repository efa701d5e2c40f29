package signing

import (
	"encoding/json"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// BundleMediaType is the media type of a Sigstore bundle v0.3: the
// artifactType of an attestation referrer and the media type of its one
// layer, as cosign v3 writes them.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Annotations of an attestation referrer. The cosign ones say what the
// bundle holds; the bomstream ones name the BOM version it attests, which
// is how a replay finds it and pushes nothing.
const (
	AnnotationContent       = "dev.sigstore.bundle.content"       // "dsse-envelope"
	AnnotationPredicateType = "dev.sigstore.bundle.predicateType" // PredicateType
	AnnotationBomHash       = "dev.bomstream.bomHash"
	AnnotationUID           = "dev.bomstream.uid"
	AnnotationChangeSeq     = "dev.bomstream.changeSeq"
	AnnotationWorkload      = "dev.bomstream.workload"
)

// Version is the BOM version an attestation is for: (uid, change
// sequence) and the BOM's content hash.
type Version struct {
	Workload  string // <cluster>/<namespace>/<kind>/<name>
	UID       string
	ChangeSeq string
	BomHash   string
	Created   string // the event's time, RFC 3339
}

// Annotations are the manifest annotations of v's attestation.
func (v Version) Annotations() map[string]string {
	return map[string]string{
		ocispec.AnnotationCreated: v.Created,
		AnnotationContent:         "dsse-envelope",
		AnnotationPredicateType:   PredicateType,
		AnnotationBomHash:         v.BomHash,
		AnnotationUID:             v.UID,
		AnnotationChangeSeq:       v.ChangeSeq,
		AnnotationWorkload:        v.Workload,
	}
}

// Attests reports whether a referrer's annotations name version v.
func (v Version) Attests(annotations map[string]string) bool {
	return annotations[AnnotationUID] == v.UID && annotations[AnnotationChangeSeq] == v.ChangeSeq &&
		annotations[AnnotationBomHash] == v.BomHash
}

// BundleConfig is the config of an attestation manifest: the empty JSON
// object typed with the bundle media type, so that registries that take
// a referrer's type from config.mediaType (go-containerregistry's) list
// it as a bundle too. cosign reads the layer, not the config.
var BundleConfig = ocispec.Descriptor{
	MediaType: BundleMediaType,
	Digest:    ocispec.DescriptorEmptyJSON.Digest,
	Size:      ocispec.DescriptorEmptyJSON.Size,
}

// BundleLayer describes the bundle bytes as the manifest's one layer.
func BundleLayer(bundle []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: BundleMediaType, Digest: digest.FromBytes(bundle), Size: int64(len(bundle))}
}

// Manifest returns the referrer manifest of a bundle on subject, and its
// descriptor: the layout cosign v3 writes (cosign attest with the new
// bundle format) and reads (verify-attestation).
func Manifest(bundle []byte, subject ocispec.Descriptor, annotations map[string]string) ([]byte, ocispec.Descriptor) {
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: BundleMediaType,
		Config:       BundleConfig,
		Layers:       []ocispec.Descriptor{BundleLayer(bundle)},
		Subject:      &subject,
		Annotations:  annotations,
	}
	body, _ := json.Marshal(m)
	return body, ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest, ArtifactType: BundleMediaType,
		Digest: digest.FromBytes(body), Size: int64(len(body)), Annotations: annotations,
	}
}

// IsBundleType reports whether a referrer's artifact type may be a bundle:
// the bundle media types, or the empty config type, which registries that
// read the type from config.mediaType report for cosign's own referrers.
func IsBundleType(artifactType string) bool {
	return strings.HasPrefix(artifactType, "application/vnd.dev.sigstore.bundle") || artifactType == ocispec.MediaTypeEmptyJSON
}
