package signing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// CertificateAuthority issues the short-lived signing certificate of
// keyless signing: a new keypair, and its certificate (DER) for the
// identity the OIDC token proves. Fulcio is the real one; tests use
// sigstore-go's VirtualSigstore (package signingtest).
type CertificateAuthority interface {
	Certify(ctx context.Context, idToken string) (sign.Keypair, []byte, error)
}

// Timestamper returns an RFC 3161 timestamp response (DER) for a signature.
type Timestamper interface {
	Timestamp(ctx context.Context, signature []byte) ([]byte, error)
}

// Option replaces a network service of keyless signing (tests, private
// deployments with their own clients).
type Option func(*Signer)

// WithAuthority replaces Fulcio.
func WithAuthority(ca CertificateAuthority) Option { return func(s *Signer) { s.ca = ca } }

// WithTransparencyLog replaces Rekor.
func WithTransparencyLog(t sign.Transparency) Option { return func(s *Signer) { s.tlog = t } }

// WithTimestamper replaces the timestamp authority.
func WithTimestamper(t Timestamper) Option { return func(s *Signer) { s.tsa = t } }

// Signer turns in-toto statements into Sigstore bundles (v0.3, a DSSE
// envelope), with a key or keyless. It is safe for concurrent use.
type Signer struct {
	keyName string   // "keyFile /path", "keyEnv NAME" or "kmsKey URI": how errors and logs name the key
	key     *keypair // key-based signing
	read    func() ([]byte, error)
	kms     string // the KMS key URI, instead of read

	tokenFile string
	ca        CertificateAuthority // keyless signing
	tlog      sign.Transparency
	tsa       Timestamper
}

// New builds the signer cfg asks for, or nil when it asks for none. A key
// is read and parsed here: a missing or unreadable key refuses the start,
// with the key's name (file or variable), never its content. Keyless
// signing checks that the token file is readable.
func New(cfg Config, getenv func(string) string, opts ...Option) (*Signer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, nil
	}
	s := &Signer{}
	if cfg.KMSKey != "" {
		s.keyName, s.kms = "attest.kmsKey "+cfg.KMSKey, cfg.KMSKey
		kp, err := s.readKey()
		if err != nil {
			return nil, err
		}
		s.key = kp
		return s, nil
	}
	if cfg.Keyless == nil {
		s.keyName, s.read = keySource(cfg, getenv)
		kp, err := s.readKey()
		if err != nil {
			return nil, err
		}
		s.key = kp
		return s, nil
	}
	k := cfg.Keyless.withDefaults()
	s.tokenFile = k.TokenFile
	s.ca = fulcio{sign.NewFulcio(&sign.FulcioOptions{BaseURL: k.FulcioURL})}
	if !k.NoTransparencyLog {
		s.tlog = sign.NewRekor(&sign.RekorOptions{BaseURL: k.RekorURL})
	}
	if k.TimestampURL != "" {
		s.tsa = tsa{sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: k.TimestampURL})}
	}
	for _, o := range opts {
		o(s)
	}
	if _, err := s.token(); err != nil {
		return nil, err
	}
	return s, nil
}

func keySource(cfg Config, getenv func(string) string) (string, func() ([]byte, error)) {
	if cfg.KeyFile != "" {
		return "attest.keyFile " + cfg.KeyFile, func() ([]byte, error) {
			b, err := os.ReadFile(cfg.KeyFile)
			if pe, ok := errors.AsType[*os.PathError](err); ok {
				err = pe.Err // the path is named once, by the caller
			}
			return b, err
		}
	}
	return "attest.keyEnv " + cfg.KeyEnv, func() ([]byte, error) {
		v := ""
		if getenv != nil {
			v = getenv(cfg.KeyEnv)
		}
		if v == "" {
			return nil, errors.New("the environment variable is not set")
		}
		return []byte(v), nil
	}
}

func (s *Signer) readKey() (*keypair, error) {
	if s.kms != "" {
		kp, err := kmsKeypair(s.kms)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.keyName, err)
		}
		return kp, nil
	}
	b, err := s.read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.keyName, err)
	}
	kp, err := parsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.keyName, err)
	}
	return kp, nil
}

func (s *Signer) token() (string, error) {
	b, err := os.ReadFile(s.tokenFile)
	if err != nil {
		if pe, ok := errors.AsType[*os.PathError](err); ok {
			err = pe.Err
		}
		return "", fmt.Errorf("attest.keyless.tokenFile %s: %w", s.tokenFile, err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("attest.keyless.tokenFile %s: the file is empty", s.tokenFile)
	}
	return t, nil
}

// String names how s signs, for logs: the key's name, or keyless.
func (s *Signer) String() string {
	if s.key != nil {
		return "key (" + s.keyName + ")"
	}
	return "keyless (token " + s.tokenFile + ")"
}

// PublicKey is the PEM public key of a key-based signer (a key file or
// variable, or a KMS key): what `bomstream verify --key` and `cosign
// verify-attestation --key` take. Keyless signers have none.
func (s *Signer) PublicKey() ([]byte, error) {
	if s.key == nil {
		return nil, errors.New("a keyless signer has no public key: verify by certificate identity")
	}
	p, err := s.key.GetPublicKeyPem()
	return []byte(p), err
}

// Keyless reports whether s signs with short-lived certificates.
func (s *Signer) Keyless() bool { return s.key == nil }

// Check reads the key again (or the token), as `sink check` does, and
// says what it checked: "signing key <file or variable> readable", or the
// OIDC token's file.
func (s *Signer) Check() (what string, err error) {
	if s.key != nil {
		_, err = s.readKey()
		return "signing key " + s.keyName + " readable", err
	}
	_, err = s.token()
	return "OIDC token " + s.tokenFile + " readable (keyless signing)", err
}

// Sign wraps statement in a DSSE envelope, signs it, and returns the
// Sigstore bundle as JSON. Keyless, it asks the CA for a certificate, logs
// the entry and adds a timestamp as configured. Its errors are transient
// (a service down, a token being rotated) and never carry the key.
func (s *Signer) Sign(ctx context.Context, statement []byte) ([]byte, error) {
	content := &sign.DSSEData{Data: statement, PayloadType: PayloadType}
	opts := sign.BundleOptions{Context: ctx}
	var kp sign.Keypair = s.key
	if s.key == nil {
		tok, err := s.token()
		if err != nil {
			return nil, err
		}
		k, der, err := s.ca.Certify(ctx, tok)
		if err != nil {
			return nil, fmt.Errorf("signing certificate: %w", err)
		}
		kp, opts.CertificateProvider = k, fixedCertificate(der)
		if s.tlog != nil {
			opts.TransparencyLogs = []sign.Transparency{s.tlog}
		}
	}
	b, err := sign.Bundle(content, kp, opts)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if s.tsa != nil {
		if err := s.timestamp(ctx, b); err != nil {
			return nil, err
		}
	}
	out, err := protojson.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	return out, nil
}

func (s *Signer) timestamp(ctx context.Context, b *protobundle.Bundle) error {
	sig := b.GetDsseEnvelope().GetSignatures()[0].GetSig()
	ts, err := s.tsa.Timestamp(ctx, sig)
	if err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	vm := b.VerificationMaterial
	if vm.TimestampVerificationData == nil {
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{}
	}
	vm.TimestampVerificationData.Rfc3161Timestamps = append(vm.TimestampVerificationData.Rfc3161Timestamps,
		&protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	return nil
}

// fixedCertificate is a sign.CertificateProvider of a certificate already issued.
type fixedCertificate []byte

func (c fixedCertificate) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return c, nil
}

// fulcio is the CertificateAuthority of a Fulcio instance.
type fulcio struct{ f *sign.Fulcio }

func (f fulcio) Certify(ctx context.Context, idToken string) (sign.Keypair, []byte, error) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, nil, err
	}
	der, err := f.f.GetCertificate(ctx, kp, &sign.CertificateProviderOptions{IDToken: idToken})
	return kp, der, err
}

type tsa struct{ t *sign.TimestampAuthority }

func (t tsa) Timestamp(ctx context.Context, sig []byte) ([]byte, error) {
	return t.t.GetTimestamp(ctx, sig)
}
