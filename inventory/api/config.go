package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
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
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("api.tlsCert: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
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
