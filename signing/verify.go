package signing

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Policy says which attestations to trust: those signed by PublicKey, or
// (keyless) those whose certificate chains to TrustedRoot and names the
// identity and issuer.
type Policy struct {
	// PublicKey is a PEM public key. With it, the key is the trust: no
	// transparency log entry or timestamp is required.
	PublicKey []byte
	// TrustedRoot is a Sigstore trusted root (trusted_root.json): CAs,
	// transparency logs, timestamp authorities. Required keyless.
	TrustedRoot []byte
	// Identity (or IdentityRegexp) must match the certificate's subject
	// alternative name, Issuer (or IssuerRegexp) its OIDC issuer.
	Identity, IdentityRegexp, Issuer, IssuerRegexp string
	// IgnoreTlog accepts keyless bundles without a transparency log entry
	// (a private deployment with a timestamp authority only); a timestamp
	// is still required.
	IgnoreTlog bool
	// Now is the clock of the expiry check; nil means time.Now.
	Now func() time.Time
}

// Verifier checks Sigstore bundles of AI-BOM attestations against a Policy.
type Verifier struct {
	v       *verify.Verifier
	policy  verify.PolicyOption
	keyless bool
	now     func() time.Time
}

// Verified is an attestation that passed.
type Verified struct {
	Subject Subject
	// PredicateType is the statement's: PredicateType for a CycloneDX BOM,
	// or another (an SLSA provenance, ...), which verifies all the same.
	PredicateType string
	BOM           []byte    // the predicate (the CycloneDX BOM), compact JSON
	Identity      string    // keyless: the certificate's identity
	Issuer        string    // keyless: its OIDC issuer
	SignedAt      time.Time // the earliest verified timestamp; zero when none (key)
}

// NewVerifier checks p and builds the verifier.
func NewVerifier(p Policy) (*Verifier, error) {
	out := &Verifier{now: p.Now}
	if out.now == nil {
		out.now = time.Now
	}
	switch {
	case len(p.PublicKey) > 0 && (p.Identity != "" || p.IdentityRegexp != ""):
		return nil, errors.New("a public key or a certificate identity: not both")
	case len(p.PublicKey) > 0:
		return out, out.withKey(p.PublicKey)
	}
	if len(p.TrustedRoot) == 0 {
		return nil, errors.New("keyless verification needs a trusted root (the Sigstore instance's trusted_root.json)")
	}
	if (p.Identity == "" && p.IdentityRegexp == "") || (p.Issuer == "" && p.IssuerRegexp == "") {
		return nil, errors.New("keyless verification needs a certificate identity and an OIDC issuer (or their regular expressions)")
	}
	tr, err := root.NewTrustedRootFromJSON(p.TrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if !p.IgnoreTlog {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if out.v, err = verify.NewVerifier(tr, opts...); err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	id, err := verify.NewShortCertificateIdentity(p.Issuer, p.IssuerRegexp, p.Identity, p.IdentityRegexp)
	if err != nil {
		return nil, fmt.Errorf("certificate identity: %w", err)
	}
	out.policy, out.keyless = verify.WithCertificateIdentity(id), true
	return out, nil
}

func (v *Verifier) withKey(pemKey []byte) error {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemKey)
	if err != nil {
		return fmt.Errorf("public key: not a PEM public key: %w", err)
	}
	sv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("public key: %w", err)
	}
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	if v.v, err = verify.NewVerifier(tm, verify.WithNoObserverTimestamps()); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	v.policy = verify.WithKey()
	return nil
}

// VerifyDigest verifies a bundle attached to the image manifest dg
// ("sha256:<hex>"): signed as the policy says, an in-toto statement whose
// subject is dg. Its predicate is a CycloneDX BOM when PredicateType says
// so; other predicates (bomstream's own images carry an SLSA provenance)
// verify too, and the caller tells them apart.
func (v *Verifier) VerifyDigest(bundleJSON []byte, dg string) (*Verified, error) {
	hexDigest, ok := strings.CutPrefix(dg, "sha256:")
	raw, err := hex.DecodeString(hexDigest)
	if !ok || err != nil || len(raw) != sha256.Size {
		return nil, fmt.Errorf("digest %q is not sha256:<hex>", dg)
	}
	return v.verify(bundleJSON, verify.WithArtifactDigest("sha256", raw))
}

// VerifyBlob verifies a bundle made for a BOM file: the statement's
// subject is the file's digest and its predicate the file's BOM.
func (v *Verifier) VerifyBlob(bundleJSON, bom []byte) (*Verified, error) {
	got, err := v.verify(bundleJSON, verify.WithArtifact(bytes.NewReader(bom)))
	if err != nil {
		return nil, err
	}
	if got.PredicateType != PredicateType {
		return nil, fmt.Errorf("predicate type %q, want %q (a CycloneDX BOM)", got.PredicateType, PredicateType)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, bom); err != nil || !bytes.Equal(compact.Bytes(), got.BOM) {
		return nil, errors.New("the attested BOM differs from the file")
	}
	return got, nil
}

func (v *Verifier) verify(bundleJSON []byte, artifact verify.ArtifactPolicyOption) (*Verified, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	env, err := b.Envelope()
	if err != nil {
		return nil, fmt.Errorf("bundle holds no DSSE envelope (not an attestation): %w", err)
	}
	if v.keyless {
		if err := v.checkExpiry(&b); err != nil {
			return nil, err
		}
	}
	res, err := v.v.Verify(&b, verify.NewPolicy(artifact, v.policy))
	if err != nil {
		return nil, err
	}
	st, err := readStatement(env.RawEnvelope().Payload)
	if err != nil {
		return nil, err
	}
	out := &Verified{PredicateType: st.PredicateType, BOM: st.Predicate, Subject: Subject{Name: st.Subject[0].Name, Digest: "sha256:" + st.Subject[0].Digest["sha256"]}}
	if c := res.Signature.Certificate; c != nil {
		out.Identity, out.Issuer = c.SubjectAlternativeName, c.Extensions.Issuer
	}
	for _, ts := range res.VerifiedTimestamps {
		if out.SignedAt.IsZero() || ts.Timestamp.Before(out.SignedAt) {
			out.SignedAt = ts.Timestamp
		}
	}
	return out, nil
}

func readStatement(payload string) (*statement, error) {
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("DSSE payload: %w", err)
	}
	var st statement
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("DSSE payload is not an in-toto statement: %w", err)
	}
	if len(st.Subject) == 0 || len(st.Predicate) == 0 {
		return nil, errors.New("the statement has no subject or no predicate")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, st.Predicate); err != nil {
		return nil, fmt.Errorf("predicate: %w", err)
	}
	st.Predicate = compact.Bytes()
	return &st, nil
}

// checkExpiry names the usual reason a short-lived certificate fails: it
// expired, and nothing in the bundle proves when it signed.
func (v *Verifier) checkExpiry(b *bundle.Bundle) error {
	vc, err := b.VerificationContent()
	if err != nil {
		return fmt.Errorf("verification material: %w", err)
	}
	cert := vc.Certificate()
	if cert == nil || !v.now().After(cert.NotAfter) {
		return nil
	}
	ts, _ := b.Timestamps()
	entries, _ := b.TlogEntries()
	if len(ts) == 0 && len(entries) == 0 {
		return fmt.Errorf("certificate expired at %s and the bundle has no timestamp (transparency log entry or RFC 3161) proving it signed before then",
			cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}
