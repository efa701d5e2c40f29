// Package signingtest runs keyless signing offline, for tests: sigstore-go's
// VirtualSigstore (an in-memory certificate authority, transparency log
// and timestamp authority) behind the seams of package attest, and fake
// OIDC tokens for it to certify.
//
//	ss := signingtest.New(t)
//	tok := ss.TokenFile(t, "builder@example.com", "https://issuer.example")
//	signer, _ := signing.New(signing.Config{Keyless: &signing.Keyless{TokenFile: tok}}, nil, ss.Options()...)
//	os.WriteFile(rootPath, ss.TrustedRoot(t), 0o644) // for bomstream verify --trusted-root
package signingtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	sgtlog "github.com/sigstore/sigstore-go/pkg/tlog"

	"github.com/bomstream/bomstream/signing"
)

// Sigstore is a VirtualSigstore, plus a second CA in the same trusted root
// that issues certificates which expired an hour ago.
type Sigstore struct {
	VS *ca.VirtualSigstore

	oldCA    *root.FulcioCertificateAuthority
	oldCAKey *ecdsa.PrivateKey
}

// New starts an in-memory Sigstore.
func New(tb testing.TB) *Sigstore {
	tb.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		tb.Fatalf("signingtest: %v", err)
	}
	rootCert, rootKey, err := ca.GenerateRootCa()
	if err != nil {
		tb.Fatalf("signingtest: %v", err)
	}
	inter, interKey, err := ca.GenerateFulcioIntermediate(rootCert, rootKey)
	if err != nil {
		tb.Fatalf("signingtest: %v", err)
	}
	old := &root.FulcioCertificateAuthority{Root: rootCert, Intermediates: []*x509.Certificate{inter},
		ValidityPeriodStart: time.Now().Add(-5 * time.Hour), ValidityPeriodEnd: time.Now().Add(time.Hour), URI: "https://old.fulcio.invalid"}
	return &Sigstore{VS: vs, oldCA: old, oldCAKey: interKey}
}

// Options are the attest options that sign against s: its CA, its log and
// its timestamp authority.
func (s *Sigstore) Options() []signing.Option {
	return []signing.Option{signing.WithAuthority(authority{s}), signing.WithTransparencyLog(tlog{s}), signing.WithTimestamper(tsa{s})}
}

// ExpiredOptions sign with certificates that expired an hour ago (issued by
// a CA of the trusted root), with no log entry and no timestamp.
func (s *Sigstore) ExpiredOptions() []signing.Option {
	return []signing.Option{signing.WithAuthority(expired{s}), signing.WithTransparencyLog(nil), signing.WithTimestamper(nil)}
}

// TrustedRoot is the trusted_root.json of s.
func (s *Sigstore) TrustedRoot(tb testing.TB) []byte {
	tb.Helper()
	cas := append(s.VS.FulcioCertificateAuthorities(), s.oldCA)
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, rawIDs(s.VS.CTLogs()), s.VS.TimestampingAuthorities(), rawIDs(s.VS.RekorLogs()))
	if err != nil {
		tb.Fatalf("signingtest: trusted root: %v", err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		tb.Fatalf("signingtest: trusted root: %v", err)
	}
	return b
}

// rawIDs gives the logs the raw key ids a trusted_root.json holds:
// VirtualSigstore, used as trusted material in memory, keeps their hex.
func rawIDs(logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	out := map[string]*root.TransparencyLog{}
	for k, l := range logs {
		c := *l
		if raw, err := hex.DecodeString(string(l.ID)); err == nil {
			c.ID = raw
		}
		out[k] = &c
	}
	return out
}

// Token returns a fake OIDC token (an unsigned JWT) for identity and
// issuer: VirtualSigstore, like Fulcio, certifies the identity it names.
func Token(identity, issuer string) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]any{"iss": issuer, "sub": identity, "email": identity, "aud": "sigstore",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// TokenFile writes Token(identity, issuer) to a file and returns its path.
func TokenFile(tb testing.TB, identity, issuer string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "token")
	if err := os.WriteFile(p, []byte(Token(identity, issuer)+"\n"), 0o600); err != nil {
		tb.Fatalf("signingtest: %v", err)
	}
	return p
}

// claims reads the identity and issuer a fake token names.
func claims(token string) (identity, issuer string, err error) {
	parts := strings.Split(token, ".")
	if len(parts) < 2 {
		return "", "", errors.New("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", fmt.Errorf("JWT claims: %w", err)
	}
	var c struct{ Iss, Sub, Email string }
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", "", fmt.Errorf("JWT claims: %w", err)
	}
	if c.Email != "" {
		c.Sub = c.Email
	}
	return c.Sub, c.Iss, nil
}

type authority struct{ s *Sigstore }

func (a authority) Certify(_ context.Context, token string) (sign.Keypair, []byte, error) {
	id, iss, err := claims(token)
	if err != nil {
		return nil, nil, err
	}
	cert, priv, err := a.s.VS.GenerateLeafCert(id, iss)
	if err != nil {
		return nil, nil, err
	}
	kp, err := signing.KeypairOf(priv)
	return kp, cert.Raw, err
}

type expired struct{ s *Sigstore }

func (e expired) Certify(_ context.Context, token string) (sign.Keypair, []byte, error) {
	id, iss, err := claims(token)
	if err != nil {
		return nil, nil, err
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	cert, err := ca.GenerateLeafCert(id, iss, time.Now().Add(-70*time.Minute), priv, e.s.oldCA.Intermediates[0], e.s.oldCAKey)
	if err != nil {
		return nil, nil, err
	}
	kp, err := signing.KeypairOf(priv)
	return kp, cert.Raw, err
}

// tlog records a DSSE entry in the virtual Rekor (v1: an inclusion promise
// signed by the log, with its integrated time).
type tlog struct{ s *Sigstore }

func (l tlog) GetTransparencyLogEntry(_ context.Context, certPEM []byte, b *protobundle.Bundle) error {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return errors.New("virtual rekor: no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	pe := b.GetDsseEnvelope()
	env := &dsse.Envelope{PayloadType: pe.GetPayloadType(), Payload: base64.StdEncoding.EncodeToString(pe.GetPayload())}
	for _, sig := range pe.GetSignatures() {
		env.Signatures = append(env.Signatures, dsse.Signature{Sig: base64.StdEncoding.EncodeToString(sig.GetSig()), KeyID: sig.GetKeyid()})
	}
	entry, err := l.s.VS.GenerateTlogEntry(cert, env, pe.GetSignatures()[0].GetSig(), time.Now().Unix(), true)
	if err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	tle := entry.TransparencyLogEntry()
	// tlog.NewEntry leaves out the kind and the inclusion promise (the
	// log's signed entry timestamp) that a bundle carries: add them.
	var kind struct{ Kind, APIVersion string }
	if err := json.Unmarshal(tle.CanonicalizedBody, &kind); err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion}
	set, err := l.s.VS.RekorSignPayload(sgtlog.RekorPayload{LogID: hex.EncodeToString([]byte(entry.LogKeyID())), IntegratedTime: tle.IntegratedTime,
		LogIndex: tle.LogIndex, Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody)})
	if err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	b.VerificationMaterial.TlogEntries = append(b.VerificationMaterial.TlogEntries, tle)
	return nil
}

type tsa struct{ s *Sigstore }

func (t tsa) Timestamp(_ context.Context, sig []byte) ([]byte, error) {
	return t.s.VS.TimestampResponse(sig)
}
