package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bomstream/bomstream/signing"
)

// DefaultTokenEnv is the variable the OIDC token of keyless signing is read
// from when no file names it: cosign's.
const DefaultTokenEnv = "SIGSTORE_ID_TOKEN"

// signFlags are the signing flags of the image builder; they make the
// signing.Config the oci sink's attest: block takes.
type signFlags struct {
	key, keyEnv, kmsKey            string
	keyless                        bool
	fulcio, rekor, timestamp       string
	tokenFile, tokenEnv, builderID string
}

func (f *signFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.key, "sign-key", "", "sign the SBOM and provenance attestations with this PEM private key `file` (ECDSA P-256 or Ed25519, unencrypted)")
	fs.StringVar(&f.keyEnv, "sign-key-env", "", "sign with the PEM private key held by this environment `variable`")
	fs.StringVar(&f.kmsKey, "sign-kms-key", "", "sign with a key in a key management service, by sigstore's `URI` (gcpkms://..., hashivault://...)")
	fs.BoolVar(&f.keyless, "keyless", false, "sign keyless: a Fulcio certificate for the OIDC token's identity, the entry logged in Rekor")
	fs.StringVar(&f.fulcio, "fulcio-url", "", "with --keyless: the certificate authority (default "+signing.DefaultFulcioURL+")")
	fs.StringVar(&f.rekor, "rekor-url", "", "with --keyless: the transparency log (default "+signing.DefaultRekorURL+")")
	fs.StringVar(&f.timestamp, "timestamp-url", "", "with --keyless: an RFC 3161 timestamp authority `URL` (default none)")
	fs.StringVar(&f.tokenFile, "oidc-token-file", "", "with --keyless: the `file` holding the OIDC token (default: the variable --oidc-token-env names)")
	fs.StringVar(&f.tokenEnv, "oidc-token-env", DefaultTokenEnv, "with --keyless: the environment `variable` holding the OIDC token")
	fs.StringVar(&f.builderID, "builder-id", DefaultBuilderID, "the provenance's builder.id (a CI workflow's URI, say)")
}

func (f *signFlags) enabled() bool {
	return f.key != "" || f.keyEnv != "" || f.kmsKey != "" || f.keyless
}

// signer makes the signer the flags ask for (nil for none), reading the
// key or the token now. A token from a variable is written to a private
// temporary file, as the signer reads a file; cleanup removes it.
func (f *signFlags) signer(getenv func(string) string) (*signing.Signer, func(), error) {
	cleanup := func() {}
	n := 0
	for _, set := range []bool{f.key != "", f.keyEnv != "", f.kmsKey != "", f.keyless} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, cleanup, fmt.Errorf("set one of --sign-key, --sign-key-env, --sign-kms-key and --keyless")
	}
	if !f.keyless && f.fulcio+f.rekor+f.timestamp+f.tokenFile != "" {
		return nil, cleanup, fmt.Errorf("--fulcio-url, --rekor-url, --timestamp-url and --oidc-token-file need --keyless")
	}
	if n == 0 {
		return nil, cleanup, nil
	}
	cfg := signing.Config{KeyFile: f.key, KeyEnv: f.keyEnv, KMSKey: f.kmsKey}
	if f.keyless {
		k := &signing.Keyless{TokenFile: f.tokenFile, FulcioURL: f.fulcio, RekorURL: f.rekor, TimestampURL: f.timestamp}
		if k.TokenFile == "" {
			tok := getenv(f.tokenEnv)
			if tok == "" {
				return nil, cleanup, fmt.Errorf("--keyless: no OIDC token: set --oidc-token-file, or the variable %s", f.tokenEnv)
			}
			dir, err := os.MkdirTemp("", "bomstream-image-token-")
			if err != nil {
				return nil, cleanup, fmt.Errorf("--keyless: token file: %w", err)
			}
			cleanup = func() { os.RemoveAll(dir) }
			k.TokenFile = filepath.Join(dir, "token")
			if err := os.WriteFile(k.TokenFile, []byte(tok), 0o600); err != nil {
				cleanup()
				return nil, func() {}, fmt.Errorf("--keyless: token file: %w", err)
			}
		}
		cfg.Keyless = k
	}
	s, err := signing.New(cfg, getenv)
	if err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("signing: %w", err)
	}
	return s, cleanup, nil
}
