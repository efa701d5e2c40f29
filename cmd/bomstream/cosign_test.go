//go:build !nocloudsinks

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/signing/signingtest"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/oci"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
)

// cosignBinary is the cosign the interoperability tests run.
func cosignBinary(t *testing.T) string { return signingtest.Cosign(t) }

// cosign runs the cosign binary with a HOME of its own (its TUF cache and
// config stay out of the user's) and an empty key password.
func cosign(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	return signingtest.Run(t, dir, bin, args...)
}

// Interoperability with cosign v3, on a registry with the referrers API
// and one with only the referrers tag schema: cosign verify-attestation
// accepts what the oci sink signed with a key, and bomstream verify
// accepts what cosign attest made.
func TestCosignInterop(t *testing.T) {
	bin := cosignBinary(t)
	for _, k := range ocitest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			dir := t.TempDir()
			// bomstream signs, cosign verifies.
			keyFile, pubFile := writeSigningKey(t, dir)
			s, err := oci.New(oci.Config{PlainHTTP: true, Attest: signing.Config{KeyFile: keyFile}}, sinks.Deps{Name: "oci"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			img := reg.PushImage(t, "app", "v1")
			bom := servingBOM(t, "chat", 1)
			export(t, s, bom, img)
			byDigest := strings.TrimSuffix(img.Image, ":v1") + "@" + img.Digest
			out := cosign(t, bin, dir, "verify-attestation", "--key", pubFile, "--type", "cyclonedx",
				"--allow-http-registry", "--insecure-ignore-tlog=true", byDigest)
			mustContain(t, "cosign verify-attestation", out, `"payloadType":"application/vnd.in-toto+json"`)
			// cosign signs, bomstream verifies.
			cosign(t, bin, dir, "generate-key-pair")
			other := reg.PushImage(t, "app", "v2")
			predicate := filepath.Join(dir, "bom.cdx.json")
			if err := os.WriteFile(predicate, servingBOM(t, "embed", 2).Body, 0o644); err != nil {
				t.Fatal(err)
			}
			otherByDigest := strings.TrimSuffix(other.Image, ":v2") + "@" + other.Digest
			cosign(t, bin, dir, "attest", "--key", filepath.Join(dir, "cosign.key"), "--type", "cyclonedx", "--predicate", predicate,
				"--use-signing-config=false", "--tlog-upload=false", "--allow-http-registry", otherByDigest)
			r := newCLI(t).mustRun("verify", "--key", filepath.Join(dir, "cosign.pub"), "--allow-http-registry", otherByDigest)
			mustContain(t, "bomstream verify", r.stdout, "1 verified, 0 rejected", "signed by key", "workload  dev/ml/Deployment/embed")
			// And each refuses the other's key.
			if r := newCLI(t).run("verify", "--key", pubFile, "--allow-http-registry", otherByDigest); r.err == nil {
				t.Fatal("bomstream verify accepted cosign's attestation with another key")
			}
		})
	}
}

// writeSigningKey writes a PEM ECDSA P-256 private key and its public key
// into dir.
func writeSigningKey(t *testing.T, dir string) (string, string) {
	t.Helper()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	pub, err := signing.PublicKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, pubFile := filepath.Join(dir, "bomstream.key"), filepath.Join(dir, "bomstream.pub")
	if err := os.WriteFile(keyFile, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return keyFile, pubFile
}
