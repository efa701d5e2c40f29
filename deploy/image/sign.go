package main

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/bomstream/bomstream/signing"
)

// maxBinary bounds the binary read from an image's layer.
const maxBinary = 512 << 20

// SignOptions say how Sign signs.
type SignOptions struct {
	// Signer signs the statements, with a key or keyless (package
	// package signing, as the oci sink signs AI-BOMs).
	Signer *signing.Signer
	// BuilderID is the provenance's runDetails.builder.id (a CI workflow,
	// say); DefaultBuilderID when empty.
	BuilderID string
}

// Attestation is one signed attestation Sign attached.
type Attestation struct {
	Subject       string  // the platform ("linux/amd64"), or "index"
	Digest        v1.Hash // the subject's manifest
	PredicateType string  // PredicateCycloneDX or PredicateSLSA
	Manifest      v1.Hash // the referrer manifest holding the bundle
}

// PredicateCycloneDX is the predicate type of the SBOM attestations:
// what `cosign verify-attestation --type cyclonedx` looks for.
const PredicateCycloneDX = signing.PredicateType

// Sign attaches to each platform image of the layout in dir, and to its
// index, two signed in-toto attestations as Sigstore bundles, in the
// layout cosign v3 writes and reads (the oci sink's): the image's
// CycloneDX SBOM (the referrer Build wrote; for the index, the platform
// SBOMs merged) and its SLSA provenance v1, read from the image itself
// (its labels, and the build info of its binary). They are referrers
// listed in index.json, which Push pushes with the image. Attestations an
// earlier Sign attached are replaced. Everything but the signatures is
// reproducible; the key is never logged or quoted in an error.
func Sign(ctx context.Context, dir string, o SignOptions) ([]Attestation, error) {
	if o.Signer == nil {
		return nil, errors.New("sign: no signer")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", dir, err)
	}
	if err := removeAttestations(p); err != nil {
		return nil, fmt.Errorf("sign %s: remove earlier attestations: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("sign: read %s: %w", dir, err)
	}
	idxDesc, sboms, err := readLayout(top)
	if err != nil {
		return nil, fmt.Errorf("sign: read %s: %w", dir, err)
	}
	idx, err := top.ImageIndex(idxDesc.Digest)
	if err != nil {
		return nil, fmt.Errorf("sign: read index %s: %w", idxDesc.Digest, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("sign: read index %s: %w", idxDesc.Digest, err)
	}
	base := provenanceInput{
		Title: im.Annotations[annTitle], Version: im.Annotations[annVersion], Revision: im.Annotations[annRevision],
		Source: cmp.Or(im.Annotations[annSource], DefaultSource), BuilderID: cmp.Or(o.BuilderID, DefaultBuilderID),
	}
	if base.Created, err = time.Parse(time.RFC3339, im.Annotations[annCreated]); err != nil {
		return nil, fmt.Errorf("sign: index %s: %s: %w", idxDesc.Digest, annCreated, err)
	}
	a := attester{path: p, signer: o.Signer, name: cmp.Or(base.Title, DefaultTitle), created: base.Created}
	var builds []platformBuild
	var platformSBOMs [][]byte
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("sign: index %s: manifest %s has no platform", idxDesc.Digest, d.Digest)
		}
		b, err := platformBuildOf(idx, d)
		if err != nil {
			return nil, fmt.Errorf("sign %s: %w", d.Digest, err)
		}
		sbom, ok := sboms[d.Digest]
		if !ok {
			return nil, fmt.Errorf("sign %s: no SBOM referrer of %s in %s", b.Platform, d.Digest, dir)
		}
		builds, platformSBOMs = append(builds, b), append(platformSBOMs, sbom)
		in := base
		in.Builds = []platformBuild{b}
		prov, err := provenancePredicate(in)
		if err != nil {
			return nil, fmt.Errorf("sign %s: provenance: %w", b.Platform, err)
		}
		if err := a.attest(ctx, b.Platform.String(), d, sbom, prov); err != nil {
			return nil, err
		}
	}
	if len(builds) == 0 {
		return nil, fmt.Errorf("sign: index %s lists no image", idxDesc.Digest)
	}
	base.Builds = builds
	prov, err := provenancePredicate(base)
	if err != nil {
		return nil, fmt.Errorf("sign index: provenance: %w", err)
	}
	sbom, err := indexSBOM(a.name, base.Version, base.Source, idxDesc.Digest, base.Created, platformSBOMs)
	if err != nil {
		return nil, fmt.Errorf("sign index: %w", err)
	}
	if err := a.attest(ctx, "index", idxDesc, sbom, prov); err != nil {
		return nil, err
	}
	if err := fixModes(dir); err != nil {
		return nil, fmt.Errorf("sign %s: %w", dir, err)
	}
	return a.done, nil
}

// removeAttestations drops the bundles an earlier Sign listed, and their
// blobs.
func removeAttestations(p layout.Path) error {
	top, err := p.ImageIndex()
	if err != nil {
		return err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return err
	}
	n := 0
	for _, d := range im.Manifests {
		if d.ArtifactType == signing.BundleMediaType {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if err := p.RemoveDescriptors(func(d v1.Descriptor) bool { return d.ArtifactType == signing.BundleMediaType }); err != nil {
		return err
	}
	garbage, err := p.GarbageCollect()
	if err != nil {
		return err
	}
	for _, h := range garbage {
		if err := p.RemoveBlob(h); err != nil {
			return err
		}
	}
	return nil
}

// readLayout finds the one image index of a layout Build wrote, and the
// SBOM of each image by its digest.
func readLayout(top v1.ImageIndex) (v1.Descriptor, map[v1.Hash][]byte, error) {
	im, err := top.IndexManifest()
	if err != nil {
		return v1.Descriptor{}, nil, err
	}
	var idx []v1.Descriptor
	sboms := map[v1.Hash][]byte{}
	for _, d := range im.Manifests {
		switch {
		case d.MediaType.IsIndex():
			idx = append(idx, d)
		case d.ArtifactType == ArtifactTypeCycloneDX:
			art, err := top.Image(d.Digest)
			if err != nil {
				return v1.Descriptor{}, nil, fmt.Errorf("sbom referrer %s: %w", d.Digest, err)
			}
			m, err := art.Manifest()
			if err != nil {
				return v1.Descriptor{}, nil, fmt.Errorf("sbom referrer %s: %w", d.Digest, err)
			}
			ls, err := art.Layers()
			if err != nil || len(ls) != 1 || m.Subject == nil {
				return v1.Descriptor{}, nil, fmt.Errorf("sbom referrer %s: want one layer and a subject (%w)", d.Digest, err)
			}
			raw, err := readLayer(ls[0])
			if err != nil {
				return v1.Descriptor{}, nil, fmt.Errorf("sbom referrer %s: %w", d.Digest, err)
			}
			sboms[m.Subject.Digest] = raw
		}
	}
	if len(idx) != 1 {
		return v1.Descriptor{}, nil, fmt.Errorf("%d image indexes, want 1", len(idx))
	}
	return v1.Descriptor{MediaType: idx[0].MediaType, Digest: idx[0].Digest, Size: idx[0].Size}, sboms, nil
}

func readLayer(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// platformBuildOf reads the binary of a platform image: its build info and
// digest.
func platformBuildOf(idx v1.ImageIndex, d v1.Descriptor) (platformBuild, error) {
	b := platformBuild{Platform: Platform{OS: d.Platform.OS, Arch: d.Platform.Architecture}}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return b, err
	}
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		return b, fmt.Errorf("want one layer (%w)", err)
	}
	rc, err := ls[0].Uncompressed()
	if err != nil {
		return b, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return b, fmt.Errorf("no %s in the layer", binaryPath)
		}
		if err != nil {
			return b, fmt.Errorf("read layer: %w", err)
		}
		if "/"+h.Name != binaryPath {
			continue
		}
		bin, err := io.ReadAll(io.LimitReader(tr, maxBinary+1))
		if err != nil || len(bin) > maxBinary {
			return b, fmt.Errorf("read %s: %d bytes (%w)", binaryPath, len(bin), err)
		}
		if b.Build, err = buildinfo.Read(bytes.NewReader(bin)); err != nil {
			return b, fmt.Errorf("build info of %s: %w", binaryPath, err)
		}
		b.Binary = sha256Hex(bin)
		return b, nil
	}
}

// attester signs statements about the images of one layout and writes
// their bundles into it.
type attester struct {
	path    layout.Path
	signer  *signing.Signer
	name    string // the statements' subject name: the image's title
	created time.Time
	done    []Attestation
}

// attest signs the SBOM and the provenance of one image (subject) and
// writes each bundle as a referrer.
func (a *attester) attest(ctx context.Context, what string, subject v1.Descriptor, sbom, prov []byte) error {
	for _, pr := range []struct {
		typ  string
		body []byte
	}{{PredicateCycloneDX, sbom}, {PredicateSLSA, prov}} {
		st, err := signing.StatementOf(signing.Subject{Name: a.name, Digest: subject.Digest.String()}, pr.typ, pr.body)
		if err != nil {
			return fmt.Errorf("sign %s: %w", what, err)
		}
		bundle, err := a.signer.Sign(ctx, st)
		if err != nil {
			return fmt.Errorf("sign %s %s with %s: %w", what, pr.typ, a.signer, err)
		}
		ann := map[string]string{
			annCreated:                      a.created.UTC().Format(time.RFC3339),
			signing.AnnotationContent:       "dsse-envelope",
			signing.AnnotationPredicateType: pr.typ,
		}
		raw, desc := signing.Manifest(bundle, ocispec.Descriptor{
			MediaType: string(subject.MediaType), Digest: digest.Digest(subject.Digest.String()), Size: subject.Size,
		}, ann)
		h, err := v1.NewHash(desc.Digest.String())
		if err != nil {
			return err
		}
		layer := static.NewLayer(bundle, signing.BundleMediaType)
		ld, err := layer.Digest()
		if err != nil {
			return err
		}
		img, err := partial.CompressedToImage(&referrer{manifest: raw, layer: layer, layerDigest: ld, configType: signing.BundleMediaType})
		if err != nil {
			return err
		}
		if err := a.path.WriteImage(img); err != nil {
			return fmt.Errorf("write %s attestation %s: %w", what, h, err)
		}
		if err := a.path.AppendDescriptor(v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Digest: h, Size: desc.Size,
			ArtifactType: signing.BundleMediaType, Annotations: ann,
		}); err != nil {
			return fmt.Errorf("list %s attestation %s: %w", what, h, err)
		}
		a.done = append(a.done, Attestation{Subject: what, Digest: subject.Digest, PredicateType: pr.typ, Manifest: h})
	}
	return nil
}

// PrintAttestations writes one line per attestation.
func PrintAttestations(w io.Writer, as []Attestation) {
	for _, a := range as {
		fmt.Fprintf(w, "  %-12s %s  attestation %s (%s)\n", a.Subject, a.Digest, a.Manifest, a.PredicateType)
	}
}
