//go:build !nocloudsinks

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/signing/signingtest"
	"github.com/bomstream/bomstream/signing/verify"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/gcs"
	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
	"github.com/bomstream/bomstream/sinks/oci"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
	"github.com/bomstream/bomstream/sinks/sinktest"
	"github.com/bomstream/bomstream/transformer"
)

const (
	signerID     = "system:serviceaccount:bomstream:bomstream"
	signerIssuer = "https://kubernetes.default.svc.cluster.local"
)

// servingBOM renders a real AI-BOM (vLLM serving a Hugging Face model).
func servingBOM(t testing.TB, name string, seq uint64) sinks.BOM {
	t.Helper()
	b := sinktest.NewBOM(sinktest.Workload(name), seq)
	body, err := schemas.CanonicalJSON(map[string]any{
		"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
		"metadata": map[string]any{"timestamp": b.Time.UTC().Format("2006-01-02T15:04:05Z"), "component": map[string]any{
			"type": "application", "name": name, "properties": []map[string]string{
				{"name": "bomstream:cluster", "value": b.Workload.Cluster}, {"name": "bomstream:namespace", "value": b.Workload.Namespace},
				{"name": "bomstream:kind", "value": b.Workload.Kind}, {"name": "bomstream:uid", "value": b.Workload.UID}}}},
		"components": []map[string]any{
			{"bom-ref": "runtime:vllm", "type": "application", "name": "vllm", "version": "0.8.5",
				"properties": []map[string]string{{"name": "bomstream:runtime:confidence", "value": "declared"}}},
			{"bom-ref": "model:llama", "type": "machine-learning-model", "name": "meta-llama/Llama-3.1-8B-Instruct"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Body, b.BomHash = body, schemas.BomHash(body)
	return b
}

// keylessSink is an oci sink that signs keyless against ss, as identity.
func keylessSink(t testing.TB, ss *signingtest.Sigstore, identity string, opts []signing.Option) *oci.Sink {
	t.Helper()
	cfg := oci.Config{PlainHTTP: true, Attest: signing.Config{Keyless: &signing.Keyless{TokenFile: signingtest.TokenFile(t, identity, signerIssuer)}}}
	s, err := oci.New(cfg, sinks.Deps{Name: "oci"}, oci.WithAttestOptions(opts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func export(t testing.TB, s sinks.Sink, b sinks.BOM, img schemas.ImageDigest) {
	t.Helper()
	b.Images = []schemas.ImageDigest{img}
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// Keyless, offline: the oci sink signs with a certificate of the in-memory
// Sigstore for a fake OIDC token and pushes; bomstream verify finds and
// verifies the attestation by identity and issuer, by tag and by digest,
// on a registry with the referrers API and one with only the tag schema.
// A wrong identity, a tampered BOM, a swapped subject digest and an
// expired certificate without a timestamp each fail with the reason.
func TestVerifyKeyless(t *testing.T) {
	for _, k := range []ocitest.Kind{ocitest.Olareg, ocitest.Distribution} {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			ss := signingtest.New(t)
			rootFile := filepath.Join(t.TempDir(), "trusted_root.json")
			if err := os.WriteFile(rootFile, ss.TrustedRoot(t), 0o644); err != nil {
				t.Fatal(err)
			}
			img := reg.PushImage(t, "app", "v1")
			export(t, keylessSink(t, ss, signerID, ss.Options()), servingBOM(t, "chat", 1), img)
			c := newCLI(t)
			flags := []string{"verify", "--allow-http-registry", "--trusted-root", rootFile, "--certificate-oidc-issuer", signerIssuer}
			r := c.mustRun(append(flags, "--certificate-identity", signerID, img.Image)...)
			mustContain(t, "verify output", r.stdout, "1 verified, 0 rejected", "signed by "+signerID+" ("+signerIssuer+") at ",
				"workload  dev/ml/Deployment/chat", "runtime   vllm 0.8.5 (declared)", "model     meta-llama/Llama-3.1-8B-Instruct")
			repo := strings.TrimSuffix(img.Image, ":v1")
			r = c.mustRun(append(flags, "--certificate-identity", signerID, "-o", "json", repo+"@"+img.Digest)...)
			var rep verify.Report
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Verified) != 1 || rep.Verified[0].SignedBy != signerID || rep.Verified[0].Models[0] != "meta-llama/Llama-3.1-8B-Instruct" ||
				rep.Verified[0].Runtimes[0] != (transformer.RuntimeSummary{Name: "vllm", Version: "0.8.5", Confidence: "declared"}) || rep.Digest != img.Digest {
				t.Fatalf("json report %+v", rep)
			}
			fails := func(what string, image string, extra []string, want string) {
				t.Helper()
				r := c.run(append(append(flags, extra...), image)...)
				if r.err == nil || !strings.Contains(r.err.Error(), want) {
					t.Errorf("%s: got %v, want an error with %q\n%s", what, r.err, want, r.stdout)
				}
			}
			fails("wrong identity", img.Image, []string{"--certificate-identity", "system:serviceaccount:other:other"}, "no matching CertificateIdentity")
			bundle := onlyBundle(t, reg, img)
			tampered := reg.PushImage(t, "app", "tampered")
			attach(t, reg, tampered, tamperBOM(t, bundle))
			fails("tampered BOM", tampered.Image, []string{"--certificate-identity", signerID}, "does not match envelope payload hash")
			swapped := reg.PushImage(t, "app", "swapped")
			attach(t, reg, swapped, bundle)
			fails("swapped subject digest", swapped.Image, []string{"--certificate-identity", signerID}, "provided artifact digest does not match any digest in statement")
			old := reg.PushImage(t, "app", "expired")
			export(t, keylessSink(t, ss, signerID, ss.ExpiredOptions()), servingBOM(t, "chat", 2), old)
			fails("expired certificate", old.Image, []string{"--certificate-identity", signerID}, "certificate expired at")
			bare := reg.PushImage(t, "app", "bare")
			fails("nothing attached", bare.Image, []string{"--certificate-identity", signerID}, "no Sigstore attestation attached")
		})
	}
}

// onlyBundle returns the one bundle attached to img.
func onlyBundle(t *testing.T, reg *ocitest.Registry, img schemas.ImageDigest) []byte {
	t.Helper()
	repo, subject := repoOf(t, reg, img)
	found, err := signing.Attachments(context.Background(), repo, subject)
	if err != nil || len(found) != 1 || found[0].Err != nil {
		t.Fatalf("attachments of %s: %v %+v", img.Image, err, found)
	}
	return found[0].Bundle
}

func repoOf(t *testing.T, reg *ocitest.Registry, img schemas.ImageDigest) (*remote.Repository, ocispec.Descriptor) {
	t.Helper()
	ref, err := registry.ParseReference(img.Image)
	if err != nil {
		t.Fatal(err)
	}
	repo := &remote.Repository{Reference: ref, PlainHTTP: true}
	d, err := repo.Resolve(context.Background(), img.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return repo, d
}

// attach pushes bundle as an attestation referrer of img, as an attacker
// with push access to the repository could.
func attach(t *testing.T, reg *ocitest.Registry, img schemas.ImageDigest, bundle []byte) {
	t.Helper()
	repo, subject := repoOf(t, reg, img)
	ctx := context.Background()
	manifest, desc := signing.Manifest(bundle, subject, map[string]string{signing.AnnotationContent: "dsse-envelope"})
	for _, blob := range []struct {
		d    ocispec.Descriptor
		body []byte
	}{{signing.BundleConfig, []byte("{}")}, {signing.BundleLayer(bundle), bundle}} {
		if ok, _ := repo.Exists(ctx, blob.d); !ok {
			if err := repo.Push(ctx, blob.d, bytes.NewReader(blob.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := repo.Push(ctx, desc, bytes.NewReader(manifest)); err != nil {
		t.Fatal(err)
	}
}

// tamperBOM changes the model a signed bundle's BOM names.
func tamperBOM(t *testing.T, bundle []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bundle, &m); err != nil {
		t.Fatal(err)
	}
	env := m["dsseEnvelope"].(map[string]any)
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	changed := bytes.Replace(payload, []byte("Llama-3.1-8B"), []byte("Llama-3.1-70B"), 1)
	if bytes.Equal(changed, payload) {
		t.Fatal("nothing to tamper with")
	}
	env["payload"] = base64.StdEncoding.EncodeToString(changed)
	out, _ := json.Marshal(m)
	return out
}

// A BOM object and its bundle, as read from the bucket, verify with
// verify --file; the BOM changed does not.
func TestVerifyFile(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	dir := t.TempDir()
	keyFile, pubFile := writeSigningKey(t, dir)
	s, err := gcs.New(context.Background(), gcs.Config{Bucket: "boms", Endpoint: srv.Endpoint(), Anonymous: true, Attest: signing.Config{KeyFile: keyFile}}, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := servingBOM(t, "chat", 1)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	p, _ := s.WorkloadPaths(b.Workload)
	name := s.BOMObject(p, b.BomHash)
	bomFile := filepath.Join(dir, filepath.Base(name))
	for _, o := range srv.Objects(t, p.Dir+"/") {
		if o.Name == name || o.Name == name+gcs.BundleSuffix {
			writeFile(t, filepath.Join(dir, filepath.Base(o.Name)), string(o.Content))
		}
	}
	c := newCLI(t)
	r := c.mustRun("verify", "--key", pubFile, "--file", bomFile)
	mustContain(t, "verify --file", r.stdout, "1 verified, 0 rejected", "workload  dev/ml/Deployment/chat", "model     meta-llama/Llama-3.1-8B-Instruct")
	replaceIn(t, bomFile, "Llama-3.1-8B", "Llama-3.1-70B")
	if r := c.run("verify", "--key", pubFile, "--file", bomFile); r.err == nil || !strings.Contains(r.err.Error(), "no attestation verified") {
		t.Fatalf("a changed BOM: %v", r.err)
	}
}
