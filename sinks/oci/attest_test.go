package oci

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// newKey writes a PEM ECDSA P-256 private key and returns its path and
// the PEM public key.
func newKey(t testing.TB) (string, []byte) {
	t.Helper()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	p := filepath.Join(t.TempDir(), "signing.key")
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(p, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := signing.PublicKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	return p, pub
}

// attestations reads and verifies the attestations attached to img.
func attestations(t *testing.T, reg *ocitest.Registry, img schemas.ImageDigest, pub []byte) []*signing.Verified {
	t.Helper()
	repo := &remote.Repository{Reference: registry.Reference{Registry: reg.Host, Repository: "app"}, PlainHTTP: true}
	subject, err := repo.Resolve(context.Background(), img.Digest)
	if err != nil {
		t.Fatal(err)
	}
	found, err := signing.Attachments(context.Background(), repo, subject)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signing.NewVerifier(signing.Policy{PublicKey: pub})
	if err != nil {
		t.Fatal(err)
	}
	var out []*signing.Verified
	for _, a := range found {
		if a.Err != nil {
			t.Fatalf("attachment %s: %v", a.Manifest.Digest, a.Err)
		}
		got, err := v.VerifyDigest(a.Bundle, img.Digest)
		if err != nil {
			t.Fatalf("attachment %s: %v", a.Manifest.Digest, err)
		}
		out = append(out, got)
	}
	return out
}

// One attestation per image digest and BOM version, next to the plain
// referrer; a replay, by the same sink or a new one, pushes nothing; the
// next version adds one. On every registry: referrers API or tag schema.
func TestAttestIdempotent(t *testing.T) {
	for _, k := range ocitest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			img := reg.PushImage(t, "app", "v1")
			keyFile, pub := newKey(t)
			cfg := map[string]any{"attest": map[string]any{"keyFile": keyFile}}
			s := newSink(t, reg, cfg, sinks.Deps{})
			ctx := context.Background()
			b1 := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img)
			if err := s.Export(ctx, b1); err != nil {
				t.Fatal(err)
			}
			got := attestations(t, reg, img, pub)
			if len(got) != 1 || string(got[0].BOM) != string(b1.Body) || got[0].Subject.Digest != img.Digest {
				t.Fatalf("attestations %+v", got)
			}
			if n := len(referrers(t, reg, "app", img)); n != 1 {
				t.Fatalf("%d plain referrers, want 1", n)
			}
			writes := reg.Writes()
			for _, again := range []*Sink{s, newSink(t, reg, cfg, sinks.Deps{})} {
				if err := again.Export(ctx, b1); err != nil {
					t.Fatal(err)
				}
			}
			if n := reg.Writes() - writes; n != 0 {
				t.Fatalf("a replay wrote %d times", n)
			}
			if err := s.Export(ctx, withImages(sinktest.NewBOM(sinktest.Workload("chat"), 2), img)); err != nil {
				t.Fatal(err)
			}
			if got := attestations(t, reg, img, pub); len(got) != 2 {
				t.Fatalf("%d attestations after a new version, want 2", len(got))
			}
		})
	}
}

// A registry outage while signing loses nothing: the export fails
// transiently, and the retry after the outage attaches exactly one.
func TestAttestOutage(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Distribution, ocitest.Options{})
	img := reg.PushImage(t, "app", "v1")
	keyFile, pub := newKey(t)
	s := newSink(t, reg, map[string]any{"attest": map[string]any{"keyFile": keyFile}, "plainReferrer": false}, sinks.Deps{})
	b := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img)
	if err := s.Export(context.Background(), b); err != nil { // resolves and caches the subject
		t.Fatal(err)
	}
	b2 := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 2), img)
	reg.SetDown(true)
	err := s.Export(context.Background(), b2)
	reg.SetDown(false)
	if err == nil || sinks.IsPermanent(err) || !strings.Contains(err.Error(), "list attestations of") {
		t.Fatalf("during the outage: %v, want a transient error", err)
	}
	for range 2 {
		if err := s.Export(context.Background(), b2); err != nil {
			t.Fatal(err)
		}
	}
	if got := attestations(t, reg, img, pub); len(got) != 2 {
		t.Fatalf("%d attestations, want 2", len(got))
	}
	if n := len(referrers(t, reg, "app", img)); n != 0 {
		t.Fatalf("plainReferrer false pushed %d plain referrers", n)
	}
}

// A missing key refuses the start with its name; a key that goes away
// later is reported by Check; neither quotes the key.
func TestAttestKeyRefused(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Olareg, ocitest.Options{})
	missing := filepath.Join(t.TempDir(), "missing.key")
	_, err := fromConfig(map[string]any{"plainHTTP": true, "attest": map[string]any{"keyFile": missing}}, sinks.Deps{})
	if err == nil || !strings.Contains(err.Error(), "attest.keyFile "+missing+": no such file") {
		t.Fatalf("missing key: %v", err)
	}
	_, err = fromConfig(map[string]any{"plainHTTP": true, "attest": map[string]any{"keyEnv": "SIGNING_KEY"}}, sinks.Deps{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "attest.keyEnv SIGNING_KEY: the environment variable is not set") {
		t.Fatalf("unset key variable: %v", err)
	}
	keyFile, _ := newKey(t)
	key, _ := os.ReadFile(keyFile)
	s := newSink(t, reg, map[string]any{"attest": map[string]any{"keyFile": keyFile}}, sinks.Deps{})
	if cs := s.Check(context.Background()); cs[0].Err != nil || !strings.Contains(cs[0].Name, "signing key attest.keyFile "+keyFile) {
		t.Fatalf("checks %v", cs)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := s.Check(context.Background())
	if cs[0].Err == nil || !strings.Contains(cs[0].Err.Error(), keyFile+": no PEM block") {
		t.Fatalf("checks %v", cs)
	}
	for _, c := range cs {
		if c.Err != nil && strings.Contains(c.Err.Error(), string(key[30:60])) {
			t.Fatalf("a check quotes the key: %v", c.Err)
		}
	}
	if _, err := fromConfig(map[string]any{"plainReferrer": false}, sinks.Deps{}); err == nil || !strings.Contains(err.Error(), "plainReferrer") {
		t.Fatalf("plainReferrer false without attest: %v", err)
	}
}

// The attestation manifest is the layout cosign v3 writes.
func TestAttestationManifest(t *testing.T) {
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digestOf("sha256:" + hex64('a')), Size: 10}
	body, desc := signing.Manifest([]byte(`{"mediaType":"x"}`), subject, version(sinktest.NewBOM(sinktest.Workload("chat"), 3)).Annotations())
	for _, want := range []string{`"artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"`, `"dev.sigstore.bundle.content":"dsse-envelope"`,
		`"dev.sigstore.bundle.predicateType":"https://cyclonedx.org/bom"`, `"dev.bomstream.changeSeq":"3"`, `"subject":{"mediaType":"application/vnd.oci.image.manifest.v1+json"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("manifest lacks %s: %s", want, body)
		}
	}
	if desc.ArtifactType != signing.BundleMediaType {
		t.Errorf("descriptor %+v", desc)
	}
}
