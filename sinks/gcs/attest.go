package gcs

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/storage"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
)

// BundleSuffix names the bundle object beside a BOM object:
// <bomhash-hex>.cdx.json.sigstore.json, which `bomstream verify --file`
// and `cosign verify-blob-attestation --bundle` read.
const BundleSuffix = ".sigstore.json"

// createBundle signs b as an in-toto attestation of the BOM object name
// (subject: gs://bucket/name, the BOM's sha256) and writes the bundle
// beside it, create-only. Signatures are not deterministic, so it looks
// first: a bundle for this BOM is there already after a replay or a retry
// whose answer was lost, and nothing is signed or written then.
func (s *Sink) createBundle(ctx context.Context, name string, b sinks.BOM) error {
	bname := name + BundleSuffix
	obj := s.client.Bucket(s.bucket).Object(bname)
	attrs, err := obj.Attrs(ctx)
	switch {
	case err == nil && attrs.Metadata[MetaBomHash] == b.BomHash:
		return nil
	case err == nil:
		return sinks.Permanent(fmt.Errorf("gs://%s/%s exists for another BOM (bomHash %q): bundles are never rewritten", s.bucket, bname, attrs.Metadata[MetaBomHash]))
	case !errors.Is(err, storage.ErrObjectNotExist):
		return s.classify(err, opRead, bname)
	}
	st, err := signing.Statement(signing.Subject{Name: "gs://" + s.bucket + "/" + name, Digest: b.BomHash}, b.Body)
	if err != nil {
		return sinks.Permanent(err)
	}
	bundle, err := s.signer.Sign(ctx, st)
	if err != nil {
		return fmt.Errorf("attest gs://%s/%s: %w", s.bucket, name, err)
	}
	meta := map[string]string{MetaBomHash: b.BomHash, MetaWorkload: b.Workload.String(), MetaUID: b.Workload.UID}
	err = s.write(ctx, obj.If(storage.Conditions{DoesNotExist: true}), bundle, signing.BundleMediaType, meta)
	if isPrecondition(err) {
		return nil // another attempt wrote it meanwhile
	}
	if err != nil {
		return s.classify(err, opCreate, bname)
	}
	s.log.Debug("bundle written", zap.Stringer("workload", b.Workload), zap.String("object", bname))
	return nil
}
