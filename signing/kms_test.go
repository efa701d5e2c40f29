package signing_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	// sigstore's own fake KMS (fakekms://), registered like the real ones.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/fake"

	"github.com/bomstream/bomstream/signing"
)

// A KMS key signs through sigstore's KMS signers: the fake provider stands
// for Google Cloud KMS and Vault, which cannot run here; the bundle
// verifies with the key's public key, and only with it.
func TestKMSKeySignVerify(t *testing.T) {
	s, err := signing.New(signing.Config{KMSKey: "fakekms://bomstream"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); !strings.Contains(got, "attest.kmsKey fakekms://bomstream") {
		t.Errorf("signer named %q", got)
	}
	pub, err := s.PublicKey()
	if err != nil || !bytes.HasPrefix(pub, []byte("-----BEGIN PUBLIC KEY-----")) {
		t.Fatalf("public key: %v %q", err, pub)
	}
	img := digest([]byte("image manifest"))
	b := signStatement(t, s, signing.Subject{Name: "reg.example/app", Digest: img}, bom)
	v, err := signing.NewVerifier(signing.Policy{PublicKey: pub})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.VerifyDigest(b, img); err != nil || !bytes.Equal(got.BOM, bom) {
		t.Fatalf("verify a KMS-signed bundle: %v", err)
	}
	other, _ := signing.New(signing.Config{KMSKey: "fakekms://other"}, nil)
	otherPub, _ := other.PublicKey()
	v2, _ := signing.NewVerifier(signing.Policy{PublicKey: otherPub})
	if _, err := v2.VerifyDigest(b, img); err == nil {
		t.Fatal("verified with another KMS key")
	}
}

// A KMS key that cannot be reached refuses the start, naming the key's URI
// and the service's reason.
func TestKMSKeyRefused(t *testing.T) {
	t.Setenv("VAULT_ADDR", "")
	t.Setenv("BAO_ADDR", "")
	_ = os.Unsetenv("VAULT_ADDR")
	_ = os.Unsetenv("BAO_ADDR")
	for uri, want := range map[string]string{
		"nokms://key":         "attest.kmsKey nokms://key: reach the key management service",
		"hashivault://signer": "attest.kmsKey hashivault://signer: reach the key management service: VAULT_ADDR",
		"gcpkms":              `attest.kmsKey "gcpkms": want a KMS key URI`,
	} {
		_, err := signing.New(signing.Config{KMSKey: uri}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", uri, err, want)
		}
	}
	if _, err := signing.New(signing.Config{KMSKey: "fakekms://k", KeyFile: "k.pem"}, nil); err == nil || !strings.Contains(err.Error(), "set one of keyFile, keyEnv, kmsKey and keyless") {
		t.Errorf("two keys: %v", err)
	}
}
