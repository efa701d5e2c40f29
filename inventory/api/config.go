package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Config is the API's listener. The zero Config serves nothing.
type Config struct {
	// Listen is the address, e.g. 127.0.0.1:8080 or :8080; "" is off.
	Listen string `yaml:"listen"`
	// TokenFile holds the bearer token clients must send.
	TokenFile string `yaml:"tokenFile"`
	// ClientCA, a PEM file, requires client certificates it signed; TLSCert
	// and TLSKey are the server's certificate (required with ClientCA,
	// optional otherwise).
	ClientCA string `yaml:"clientCA"`
	TLSCert  string `yaml:"tlsCert"`
	TLSKey   string `yaml:"tlsKey"`
}

// Validate refuses an unguarded listener beyond loopback, naming the
// field at fault.
func (c Config) Validate() error {
	if c.Listen == "" {
		return nil
	}
	var errs []error
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		errs = append(errs, fmt.Errorf("api.listen: %w", err))
	}
	if err == nil && !isLoopback(host) && c.TokenFile == "" && c.ClientCA == "" {
		errs = append(errs, fmt.Errorf("api.listen: %s is not a loopback address and neither api.tokenFile nor api.clientCA is set: "+
			"anyone who reaches it could read the whole inventory; listen on 127.0.0.1, or set --api-token-file or --api-client-ca", c.Listen))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("api.tlsCert and api.tlsKey: set both or neither"))
	}
	if c.ClientCA != "" && c.TLSCert == "" {
		errs = append(errs, errors.New("api.clientCA: needs api.tlsCert and api.tlsKey (client certificates need TLS)"))
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// token reads the token file; "" when none is configured.
func (c Config) token() (string, error) {
	if c.TokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("api.tokenFile: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("api.tokenFile %s: empty", c.TokenFile)
	}
	return t, nil
}

// Listen binds c.Listen, with TLS when configured; nil when c.Listen is "".
func Listen(c Config) (net.Listener, error) {
	if c.Listen == "" {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("api.listen %s: %w", c.Listen, err)
	}
	if c.TLSCert == "" {
		return ln, nil
	}
	tc, err := c.tlsConfig()
	if err != nil {
		ln.Close()
		return nil, err
	}
	return tls.NewListener(ln, tc), nil
}

func (c Config) tlsConfig() (*tls.Config, error) {
	kp := &keyPair{certFile: c.TLSCert, keyFile: c.TLSKey}
	if err := kp.reload(); err != nil {
		return nil, err
	}
	tc := &tls.Config{GetCertificate: kp.get, MinVersion: tls.VersionTLS12}
	if c.ClientCA != "" {
		pem, err := os.ReadFile(c.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("api.clientCA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("api.clientCA %s: no PEM certificate", c.ClientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// keyPair is the server's certificate, read again when its files change:
// a certificate renewed in place (cert-manager rewrites the Secret, the
// kubelet swaps the mounted files) is served from the next handshake on.
// A pair that does not load (caught half-written) keeps the last good one
// until the files change again.
type keyPair struct {
	certFile, keyFile string

	mu     sync.Mutex
	cert   *tls.Certificate
	stamp  [2]time.Time // modification times of the files loaded
	failed [2]time.Time // of the files that last failed to load
}

// stamps are the files' modification times (zero when one cannot be read).
func (kp *keyPair) stamps() [2]time.Time {
	var out [2]time.Time
	for i, f := range []string{kp.certFile, kp.keyFile} {
		if fi, err := os.Stat(f); err == nil {
			out[i] = fi.ModTime()
		}
	}
	return out
}

// reload loads the pair when its files changed since the last load.
func (kp *keyPair) reload() error {
	st := kp.stamps()
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if kp.cert != nil && (st == kp.stamp || st == kp.failed) {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		kp.failed = st
		return fmt.Errorf("api.tlsCert %s, api.tlsKey %s: %w", kp.certFile, kp.keyFile, err)
	}
	kp.cert, kp.stamp = &cert, st
	return nil
}

// get is tls.Config.GetCertificate: the pair, reloaded if its files
// changed, else the last good one.
func (kp *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	_ = kp.reload() // a pair that does not load keeps the last good one
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.cert, nil
}
