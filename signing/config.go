package signing

import (
	"fmt"
	"net/url"
	"strings"
)

// Public-good Sigstore, the default of keyless signing.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
	// DefaultTokenFile is where a projected service-account token with the
	// audience "sigstore" is mounted (see docs/signing.md).
	DefaultTokenFile = "/var/run/secrets/tokens/sigstore"
)

// Config is the attest: block of a sink. The zero value signs nothing.
// Exactly one of KeyFile, KeyEnv, KMSKey and Keyless enables signing.
type Config struct {
	// KeyFile is a PEM private key, ECDSA P-256 (PKCS#8 or SEC 1) or
	// Ed25519 (PKCS#8), such as a key of a mounted Secret. It is read once,
	// at start; Check reads it again.
	KeyFile string `yaml:"keyFile"`
	// KeyEnv names an environment variable that holds the PEM private key
	// (a Secret exposed with secretKeyRef).
	KeyEnv string `yaml:"keyEnv"`
	// KMSKey is a key in a key management service, by sigstore's URI:
	// gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K[/cryptoKeyVersions/V]
	// (Google Cloud KMS, with the pod's Workload Identity or
	// GOOGLE_APPLICATION_CREDENTIALS) or hashivault://NAME (Vault's transit
	// engine, with VAULT_ADDR and VAULT_TOKEN). The private key never
	// leaves the service: each signature is a call to it.
	KMSKey string `yaml:"kmsKey"`
	// Keyless signs with a short-lived Fulcio certificate for the pod's
	// identity, logs the signature in Rekor, and optionally adds an RFC 3161
	// timestamp.
	Keyless *Keyless `yaml:"keyless"`
}

// Keyless configures keyless signing; the URLs default to public-good
// Sigstore, and may name a private deployment.
type Keyless struct {
	// TokenFile is the OIDC token presented to Fulcio, read again for each
	// certificate (projected tokens rotate); default DefaultTokenFile.
	TokenFile string `yaml:"tokenFile"`
	// FulcioURL is the certificate authority; default DefaultFulcioURL.
	FulcioURL string `yaml:"fulcioURL"`
	// RekorURL is the transparency log; default DefaultRekorURL.
	RekorURL string `yaml:"rekorURL"`
	// NoTransparencyLog leaves Rekor out (a private deployment without a
	// log): TimestampURL is then required, since a short-lived
	// certificate needs a trusted time.
	NoTransparencyLog bool `yaml:"noTransparencyLog"`
	// TimestampURL is an RFC 3161 timestamp authority (the full URL, e.g.
	// https://timestamp.sigstore.dev/api/v1/timestamp); empty means none.
	TimestampURL string `yaml:"timestampURL"`
}

// Enabled reports whether c asks for signing.
func (c *Config) Enabled() bool {
	return c.KeyFile != "" || c.KeyEnv != "" || c.KMSKey != "" || c.Keyless != nil
}

// Validate checks c without any I/O; errors name the key (under attest.).
func (c *Config) Validate() error {
	n := 0
	for _, set := range []bool{c.KeyFile != "", c.KeyEnv != "", c.KMSKey != "", c.Keyless != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("attest: set one of keyFile, keyEnv, kmsKey and keyless")
	}
	if scheme, _, ok := strings.Cut(c.KMSKey, "://"); c.KMSKey != "" && (!ok || scheme == "") {
		return fmt.Errorf("attest.kmsKey %q: want a KMS key URI such as gcpkms://projects/... or hashivault://NAME", c.KMSKey)
	}
	if strings.ContainsAny(c.KeyFile+c.KeyEnv, "\x00\n") {
		return fmt.Errorf("attest: keyFile or keyEnv contains a NUL or a line break")
	}
	if k := c.Keyless; k != nil {
		for key, u := range map[string]string{"fulcioURL": k.FulcioURL, "rekorURL": k.RekorURL, "timestampURL": k.TimestampURL} {
			if err := checkURL(u); err != nil {
				return fmt.Errorf("attest.keyless.%s: %w", key, err)
			}
		}
		if k.NoTransparencyLog && k.TimestampURL == "" {
			return fmt.Errorf("attest.keyless.noTransparencyLog: needs timestampURL, or nothing would prove when a short-lived certificate signed")
		}
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials")
	}
	return nil
}

func (k *Keyless) withDefaults() Keyless {
	out := *k
	if out.TokenFile == "" {
		out.TokenFile = DefaultTokenFile
	}
	if out.FulcioURL == "" {
		out.FulcioURL = DefaultFulcioURL
	}
	if out.RekorURL == "" {
		out.RekorURL = DefaultRekorURL
	}
	return out
}
