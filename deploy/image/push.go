package main

import (
	"context"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushOptions tune Push.
type PushOptions struct {
	// Insecure talks plain HTTP to the registry.
	Insecure bool
	// Log gets one line per manifest pushed; nil for none.
	Log io.Writer
	// Remote are extra options for go-containerregistry's remote package
	// (a transport in tests). Credentials come from the default keychain
	// (~/.docker/config.json and its credential helpers) unless one of
	// these sets others.
	Remote []remote.Option
}

// Push copies the layout Build wrote (or a copy of it) to a registry: the
// multi-arch index with its images under ref, then each SBOM referrer by
// digest. go-containerregistry updates the referrers tag scheme
// (sha256-<digest>) itself when the registry has no referrers API.
func Push(ctx context.Context, dir, ref string, o PushOptions) error {
	var nopts []name.Option
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	dst, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return fmt.Errorf("push: reference %q: %w", ref, err)
	}
	ropts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, o.Remote...)

	p, err := layout.FromPath(dir)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return fmt.Errorf("push: read %s: %w", dir, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return fmt.Errorf("push: read %s: %w", dir, err)
	}
	var indexes int
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() {
			indexes++
		}
	}
	if indexes != 1 {
		return fmt.Errorf("push: %s holds %d image indexes, want 1", dir, indexes)
	}
	// The index first: the referrers' subjects are in it.
	for _, d := range im.Manifests {
		if !d.MediaType.IsIndex() {
			continue
		}
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			return fmt.Errorf("push: %w", err)
		}
		if err := remote.WriteIndex(dst, idx, ropts...); err != nil {
			return fmt.Errorf("push index %s to %s: %w", d.Digest, dst, err)
		}
		logf(o.Log, "pushed %s@%s\n", dst, d.Digest)
	}
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() || d.ArtifactType == "" {
			continue
		}
		img, err := top.Image(d.Digest)
		if err != nil {
			return fmt.Errorf("push: %w", err)
		}
		to := dst.Context().Digest(d.Digest.String())
		if err := remote.Write(to, img, ropts...); err != nil {
			return fmt.Errorf("push referrer %s to %s: %w", d.Digest, dst.Context(), err)
		}
		logf(o.Log, "pushed %s (%s)\n", to, d.ArtifactType)
	}
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
