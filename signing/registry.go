package signing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// maxBundle bounds the size of a bundle read from a registry.
const maxBundle = 64 << 20

// Attached is one Sigstore bundle attached to an image.
type Attached struct {
	Manifest ocispec.Descriptor // the referrer manifest
	Bundle   []byte
	Err      error // why the bundle could not be read; Bundle is nil then
}

// Attachments lists the Sigstore bundles attached to subject in repo, as
// referrers (through the referrers API or the referrers tag schema,
// whichever the registry has): bomstream's, and those cosign attached.
// Referrers of other kinds are left out.
func Attachments(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor) ([]Attached, error) {
	var refs []ocispec.Descriptor
	err := repo.Referrers(ctx, subject, "", func(rs []ocispec.Descriptor) error {
		for _, r := range rs {
			if IsBundleType(r.ArtifactType) {
				refs = append(refs, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list referrers of %s: %w", subject.Digest, err)
	}
	var out []Attached
	for _, r := range refs {
		b, err := fetchBundle(ctx, repo, r)
		if b == nil && err == nil {
			continue // not a bundle (an empty-config artifact of another kind)
		}
		out = append(out, Attached{Manifest: r, Bundle: b, Err: err})
	}
	return out, nil
}

// fetchBundle reads the bundle of referrer r: nil and no error when r
// holds no bundle layer.
func fetchBundle(ctx context.Context, repo *remote.Repository, r ocispec.Descriptor) ([]byte, error) {
	raw, err := content.FetchAll(ctx, repo, r)
	if err != nil {
		return nil, fmt.Errorf("fetch manifest %s: %w", r.Digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", r.Digest, err)
	}
	if len(m.Layers) != 1 || !strings.HasPrefix(m.Layers[0].MediaType, "application/vnd.dev.sigstore.bundle") {
		return nil, nil
	}
	if m.Layers[0].Size > maxBundle {
		return nil, fmt.Errorf("bundle %s: %d bytes, more than %d", m.Layers[0].Digest, m.Layers[0].Size, maxBundle)
	}
	b, err := content.FetchAll(ctx, repo.Blobs(), m.Layers[0])
	if err != nil {
		return nil, fmt.Errorf("fetch bundle %s: %w", m.Layers[0].Digest, err)
	}
	return b, nil
}
