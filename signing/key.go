package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
)

// keypair is a sign.Keypair over a private key bomstream holds: one read
// from a PEM file or variable, or a short-lived one certified by a CA. It
// has no String method and is never formatted: the key stays out of logs.
type keypair struct {
	priv crypto.Signer
	pub  crypto.PublicKey
	alg  protocommon.PublicKeyDetails
	hint []byte
}

var _ sign.Keypair = (*keypair)(nil)

// KeypairOf wraps an ECDSA P-256 or Ed25519 private key as a
// sign.Keypair: what a CertificateAuthority returns with its certificate.
func KeypairOf(priv crypto.PrivateKey) (sign.Keypair, error) { return newKeypair(priv) }

// newKeypair wraps an ECDSA P-256 or Ed25519 private key.
func newKeypair(priv crypto.PrivateKey) (*keypair, error) {
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T key: want ECDSA P-256 or Ed25519", priv)
	}
	return signerKeypair(signer)
}

// signerKeypair wraps a signer whose public key is ECDSA P-256 or Ed25519:
// a private key, or a key management service's signer.
func signerKeypair(signer crypto.Signer) (*keypair, error) {
	kp := &keypair{priv: signer, pub: signer.Public()}
	switch k := kp.pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, errors.New("an ECDSA key must be on P-256")
		}
		kp.alg = protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
	case ed25519.PublicKey:
		kp.alg = protocommon.PublicKeyDetails_PKIX_ED25519
	default:
		return nil, fmt.Errorf("a %T key: want ECDSA P-256 or Ed25519", kp.pub)
	}
	der, err := x509.MarshalPKIXPublicKey(kp.pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	sum := sha256.Sum256(der)
	kp.hint = []byte(base64.StdEncoding.EncodeToString(sum[:]))
	return kp, nil
}

// parsePrivateKey reads a PEM private key. Its errors never quote the
// input: the caller names where it came from.
func parsePrivateKey(data []byte) (*keypair, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var priv crypto.PrivateKey
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		priv, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		priv, err = x509.ParseECPrivateKey(block.Bytes)
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		return nil, errors.New("an encrypted cosign key: export it unencrypted as PKCS#8 (see docs/signing.md)")
	default:
		return nil, fmt.Errorf("a PEM block of type %q: want PRIVATE KEY or EC PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, errors.New("the PEM block does not hold a readable private key")
	}
	return newKeypair(priv)
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	if k.alg == protocommon.PublicKeyDetails_PKIX_ED25519 {
		return protocommon.HashAlgorithm_HASH_ALGORITHM_UNSPECIFIED
	}
	return protocommon.HashAlgorithm_SHA2_256
}

func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails { return k.alg }
func (k *keypair) GetHint() []byte                                   { return k.hint }
func (k *keypair) GetPublicKey() crypto.PublicKey                    { return k.pub }

func (k *keypair) GetKeyAlgorithm() string {
	if k.alg == protocommon.PublicKeyDetails_PKIX_ED25519 {
		return "ED25519"
	}
	return "ECDSA"
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	der, err := x509.MarshalPKIXPublicKey(k.pub)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// SignData signs data (SHA-256 for ECDSA, the message itself for Ed25519)
// and returns the signature and the digest signed.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	if k.alg == protocommon.PublicKeyDetails_PKIX_ED25519 {
		sig, err := k.priv.Sign(rand.Reader, data, crypto.Hash(0))
		return sig, data, err
	}
	sum := sha256.Sum256(data)
	sig, err := k.priv.Sign(rand.Reader, sum[:], crypto.SHA256)
	return sig, sum[:], err
}

// PublicKeyPEM returns the PEM public key of a PEM private key: what
// `bomstream verify --key` and `cosign verify-attestation --key` take.
func PublicKeyPEM(privatePEM []byte) ([]byte, error) {
	kp, err := parsePrivateKey(privatePEM)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	s, err := kp.GetPublicKeyPem()
	return []byte(s), err
}
