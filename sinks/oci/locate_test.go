package oci

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

var _ sinks.Locator = (*Sink)(nil)

// listed reports whether the registry lists, as another client sees it, a
// referrer of the subject l names, with l's artifact type, for bomHash.
func listed(t *testing.T, reg *ocitest.Registry, l sinks.Location, bomHash string) bool {
	t.Helper()
	repo, dg, ok := strings.Cut(strings.TrimPrefix(l.Where, reg.Host+"/"), "@")
	if !ok || !strings.HasPrefix(l.Where, reg.Host+"/") {
		t.Fatalf("%s: not %s/<repository>@<digest>", l.Where, reg.Host)
	}
	for _, d := range reg.Referrers(t, repo, dg, l.ArtifactType) {
		if d.Annotations[AnnotationBomHash] == bomHash { // attestations carry it too
			return true
		}
	}
	return false
}

// Locate names the subjects Export made the BOM a referrer of, in the
// repository it pushed to: one per image with a resolved digest, whether
// the version is current or not (referrers are history).
func TestLocate(t *testing.T) {
	for _, k := range ocitest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			app, other := reg.PushImage(t, "app", "v1"), reg.PushImage(t, "team/other", "v2")
			for _, c := range []struct {
				name  string
				extra map[string]any
				repos []string
			}{
				{"image repositories", nil, []string{"app", "team/other"}},
				{"configured repository", map[string]any{"repository": reg.Host + "/sboms/all"}, []string{"sboms/all", "sboms/all"}},
			} {
				s := newSink(t, reg, c.extra, sinks.Deps{})
				b := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), app, other, schemas.ImageDigest{Image: reg.Host + "/sidecar:1"})
				if err := s.Export(context.Background(), b); err != nil {
					t.Fatal(err)
				}
				locs := s.Locate(sinktest.Version(b, false))
				if !reflect.DeepEqual(locs, s.Locate(sinktest.Version(b, true))) {
					t.Errorf("%s: the current version is located elsewhere than an older one", c.name)
				}
				if len(locs) != 2 {
					t.Fatalf("%s: %+v, want the two images with a digest", c.name, locs)
				}
				for i, l := range locs {
					want := reg.Host + "/" + c.repos[i] + "@" + []schemas.ImageDigest{app, other}[i].Digest
					if l.Where != want || l.What != "referrer" || l.Type != "oci" || l.Sink != "oci-test" || l.ArtifactType != ArtifactType || l.URL != "" {
						t.Errorf("%s: %+v, want a referrer of %s", c.name, l, want)
					}
					if !listed(t, reg, l, b.BomHash) {
						t.Errorf("%s: no referrer of %s with %s for the BOM", c.name, l.Where, l.ArtifactType)
					}
				}
				if locs := s.Locate(sinks.Version{Workload: b.Workload, Images: b.Images, Latest: true}); locs != nil {
					t.Errorf("%s: a tombstone: %+v, want none", c.name, locs)
				}
			}
		})
	}
}

// Signed and plain: an attestation beside the referrer, or instead of it.
func TestLocateAttestation(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Olareg, ocitest.Options{})
	img := reg.PushImage(t, "app", "v1")
	keyFile, _ := newKey(t)
	for _, c := range []struct {
		plain bool
		what  []string
	}{{true, []string{"referrer", "attestation"}}, {false, []string{"attestation"}}} {
		s := newSink(t, reg, map[string]any{"attest": map[string]any{"keyFile": keyFile}, "plainReferrer": c.plain}, sinks.Deps{})
		b := withImages(sinktest.NewBOM(sinktest.Workload(fmt.Sprint("chat-", c.plain)), 1), img)
		if err := s.Export(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		locs := s.Locate(sinktest.Version(b, true))
		if len(locs) != len(c.what) {
			t.Fatalf("plainReferrer %v: %+v, want %v", c.plain, locs, c.what)
		}
		for i, l := range locs {
			want := map[string]string{"referrer": ArtifactType, "attestation": signing.BundleMediaType}[c.what[i]]
			if l.What != c.what[i] || l.ArtifactType != want || l.Where != reg.Host+"/app@"+img.Digest {
				t.Errorf("plainReferrer %v: %+v, want a %s of type %s", c.plain, l, c.what[i], want)
			}
			if !listed(t, reg, l, b.BomHash) {
				t.Errorf("plainReferrer %v: no %s of %s for the BOM", c.plain, l.ArtifactType, l.Where)
			}
		}
	}
}

// No location carries the registry credentials, nor where they are kept.
func TestLocateCarriesNoCredential(t *testing.T) {
	writer := ocitest.User{Name: "ci-s3cr3t", Password: "s3cr3t-w"}
	reg := ocitest.Start(t, ocitest.Olareg, ocitest.Options{Users: []ocitest.User{writer}})
	img := reg.PushImage(t, "app", "v1")
	raw := reg.Config(t) // the writer's docker config, in a file
	s, err := fromConfig(raw, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	locs := s.Locate(sinktest.Version(b, true))
	if len(locs) != 1 || !listed(t, reg, locs[0], b.BomHash) {
		t.Fatalf("locations %+v", locs)
	}
	for _, l := range locs {
		if text := fmt.Sprintf("%+v", l); strings.Contains(text, "s3cr3t") || strings.Contains(text, raw["dockerConfig"].(string)) {
			t.Errorf("a location carries the credentials or their file: %s", text)
		}
	}
}
