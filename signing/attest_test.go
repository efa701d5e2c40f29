package signing_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/signing/signingtest"
)

const (
	identity = "system:serviceaccount:bomstream:bomstream"
	issuer   = "https://kubernetes.default.svc.cluster.local"
)

var bom = []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,"components":[{"type":"machine-learning-model","name":"meta-llama/Llama-3.1-8B"}]}`)

func digest(b []byte) string { return schemas.BomHash(b) }

// WriteKey writes a new PEM private key (PKCS#8) and returns its path.
func writeKey(t testing.TB, priv any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func publicPEM(t testing.TB, keyFile string) []byte {
	t.Helper()
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signing.PublicKeyPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func signStatement(t *testing.T, s *signing.Signer, sub signing.Subject, body []byte) []byte {
	t.Helper()
	st, err := signing.Statement(sub, body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeySignVerify(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for name, priv := range map[string]any{"ecdsa-p256": ec, "ed25519": ed} {
		t.Run(name, func(t *testing.T) {
			keyFile := writeKey(t, priv)
			s, err := signing.New(signing.Config{KeyFile: keyFile}, nil)
			if err != nil {
				t.Fatal(err)
			}
			img := digest([]byte("image manifest"))
			b := signStatement(t, s, signing.Subject{Name: "reg.example/app", Digest: img}, bom)
			v, err := signing.NewVerifier(signing.Policy{PublicKey: publicPEM(t, keyFile)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.VerifyDigest(b, img)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.BOM, bom) || got.Subject.Digest != img {
				t.Fatalf("verified %+v", got)
			}
			if _, err := v.VerifyDigest(b, digest([]byte("another image"))); err == nil {
				t.Fatal("verified against another digest")
			}
			if _, err := v.VerifyDigest(tamper(t, b), img); err == nil || !strings.Contains(err.Error(), "could not verify envelope") {
				t.Fatalf("tampered BOM: %v", err)
			}
			other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			v2, _ := signing.NewVerifier(signing.Policy{PublicKey: publicPEM(t, writeKey(t, other))})
			if _, err := v2.VerifyDigest(b, img); err == nil {
				t.Fatal("verified with another key")
			}
		})
	}
}

// A key that is missing, unreadable or not a key refuses the start, named
// by its file or variable, never quoted.
func TestKeyRefused(t *testing.T) {
	dir := t.TempDir()
	secret := "-----BEGIN PRIVATE KEY-----\nczNjcjN0bWF0ZXJpYWwK\n-----END PRIVATE KEY-----\n"
	bad := filepath.Join(dir, "bad.pem")
	_ = os.WriteFile(bad, []byte(secret), 0o600)
	unreadable := filepath.Join(dir, "dir.pem")
	_ = os.Mkdir(unreadable, 0o700)
	env := map[string]string{"BOMSTREAM_SIGNING_KEY": secret}
	for _, c := range []struct {
		cfg  signing.Config
		want string
	}{
		{signing.Config{KeyFile: filepath.Join(dir, "missing.pem")}, "attest.keyFile " + filepath.Join(dir, "missing.pem") + ": no such file"},
		{signing.Config{KeyFile: bad}, "attest.keyFile " + bad + ": the PEM block does not hold a readable private key"},
		{signing.Config{KeyFile: unreadable}, "attest.keyFile " + unreadable + ": is a directory"},
		{signing.Config{KeyEnv: "BOMSTREAM_SIGNING_KEY"}, "attest.keyEnv BOMSTREAM_SIGNING_KEY: the PEM block"},
		{signing.Config{KeyEnv: "UNSET"}, "attest.keyEnv UNSET: the environment variable is not set"},
		{signing.Config{Keyless: &signing.Keyless{TokenFile: filepath.Join(dir, "token")}}, "attest.keyless.tokenFile " + filepath.Join(dir, "token") + ": no such file"},
	} {
		_, err := signing.New(c.cfg, func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "czNjcjN0") {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

func keyless(t *testing.T, ss *signingtest.Sigstore, id string, opts ...signing.Option) *signing.Signer {
	t.Helper()
	s, err := signing.New(signing.Config{Keyless: &signing.Keyless{TokenFile: signingtest.TokenFile(t, id, issuer)}}, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKeyless(t *testing.T) {
	ss := signingtest.New(t)
	s := keyless(t, ss, identity, ss.Options()...)
	img := digest([]byte("image manifest"))
	b := signStatement(t, s, signing.Subject{Name: "reg.example/app", Digest: img}, bom)
	policy := signing.Policy{TrustedRoot: ss.TrustedRoot(t), Identity: identity, Issuer: issuer}
	v, err := signing.NewVerifier(policy)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.VerifyDigest(b, img)
	if err != nil {
		t.Fatal(err)
	}
	if got.Identity != identity || got.Issuer != issuer || got.SignedAt.IsZero() {
		t.Fatalf("verified %+v", got)
	}
	fails := func(name string, v *signing.Verifier, b []byte, dg, want string) {
		t.Helper()
		_, err := v.VerifyDigest(b, dg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
	wrong := policy
	wrong.Identity = "system:serviceaccount:other:other"
	vw, _ := signing.NewVerifier(wrong)
	fails("wrong identity", vw, b, img, "no matching CertificateIdentity")
	fails("swapped subject digest", v, b, digest([]byte("other image")), "provided artifact digest does not match any digest in statement")
	fails("tampered BOM", v, tamper(t, b), img, "does not match envelope payload hash")
	expired := signStatement(t, keyless(t, ss, identity, ss.ExpiredOptions()...), signing.Subject{Name: "reg.example/app", Digest: img}, bom)
	fails("expired certificate without timestamp", v, expired, img, "certificate expired at")
}

// tamper changes the BOM inside a signed bundle's DSSE payload.
func tamper(t *testing.T, bundle []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bundle, &m); err != nil {
		t.Fatal(err)
	}
	env := m["dsseEnvelope"].(map[string]any)
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	payload = bytes.Replace(payload, []byte("Llama-3.1-8B"), []byte("Llama-3.1-9B"), 1)
	env["payload"] = base64.StdEncoding.EncodeToString(payload)
	out, _ := json.Marshal(m)
	return out
}
