package oci

import (
	"context"
	"fmt"
	"strconv"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
)

// version names the BOM version an attestation is for.
func version(b sinks.BOM) signing.Version {
	return signing.Version{
		Workload: b.Workload.String(), UID: b.Workload.UID, ChangeSeq: strconv.FormatUint(b.ChangeSeq, 10),
		BomHash: b.BomHash, Created: b.Time.UTC().Format(time.RFC3339Nano),
	}
}

// pushAttestation attaches a signed in-toto attestation of b to subject,
// unless one for this BOM version is there already: signatures are not
// deterministic, so it looks before it signs, and a replay or a retry
// pushes nothing new. The look, the signature and the push happen under
// the subject's lock.
func (s *Sink) pushAttestation(ctx context.Context, b sinks.BOM, t target, subject ocispec.Descriptor) error {
	v := version(b)
	dst := s.repo(t.dest)
	where := t.dest.Registry + "/" + t.dest.Repository
	lock := s.subjectLock(where + "@" + subject.Digest.String())
	lock.Lock()
	defer lock.Unlock()
	listed, err := s.isReferrer(ctx, dst, subject, signing.BundleMediaType, func(r ocispec.Descriptor) bool { return v.Attests(r.Annotations) })
	if err != nil {
		return s.classify(err, fmt.Sprintf("list attestations of %s@%s", where, subject.Digest), t.dest)
	}
	if listed {
		s.m.attPresent.Inc()
		return nil
	}
	st, err := signing.Statement(signing.Subject{Name: t.source.Registry + "/" + t.source.Repository, Digest: subject.Digest.String()}, b.Body)
	if err != nil {
		return sinks.Permanent(err)
	}
	bundle, err := s.signer.Sign(ctx, st)
	if err != nil {
		return fmt.Errorf("attest %s@%s: %w", where, subject.Digest, err)
	}
	manifest, desc := signing.Manifest(bundle, subject, v.Annotations())
	blobs := []ocispec.Descriptor{signing.BundleConfig, signing.BundleLayer(bundle)}
	if err := s.upload(ctx, dst, t.dest, blobs, [][]byte{[]byte("{}"), bundle}, desc, manifest); err != nil {
		return err
	}
	s.m.attPushed.Inc()
	s.log.Debug("attestation pushed", zap.Stringer("workload", b.Workload), zap.String("image", t.image),
		zap.String("repository", where), zap.Stringer("subject", subject.Digest), zap.Stringer("attestation", desc.Digest))
	return nil
}
