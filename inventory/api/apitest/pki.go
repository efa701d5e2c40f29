package apitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// PKI is a certificate authority a test makes, and the files of what it
// issues: the CA certificate (CAFile, PEM) for clients to trust, server
// certificates and keys for the API to serve.
type PKI struct {
	// Dir holds the files; CAFile is the CA certificate in it.
	Dir, CAFile string
	// Pool trusts the CA alone.
	Pool *x509.CertPool

	mu     sync.Mutex
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

// NewPKI makes a CA named name, valid for a day, and writes its
// certificate to Dir/ca.crt.
func NewPKI(t testing.TB, name string) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{Dir: t.TempDir(), Pool: x509.NewCertPool(), ca: ca, key: key, serial: 1}
	p.Pool.AddCert(ca)
	p.CAFile = filepath.Join(p.Dir, "ca.crt")
	writePEM(t, p.CAFile, "CERTIFICATE", der)
	return p
}

// IssueServer issues a server certificate for hosts (IP addresses or DNS
// names) and writes it and its key, PEM, to certFile and keyFile (made
// in Dir when empty, as tls.crt and tls.key). It returns the files and
// the certificate.
func (p *PKI) IssueServer(t testing.TB, certFile, keyFile string, hosts ...string) (string, string, *x509.Certificate) {
	t.Helper()
	p.mu.Lock()
	p.serial++
	serial := p.serial
	p.mu.Unlock()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tpl.IPAddresses = append(tpl.IPAddresses, ip)
		} else {
			tpl.DNSNames = append(tpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if certFile == "" {
		certFile = filepath.Join(p.Dir, "tls.crt")
	}
	if keyFile == "" {
		keyFile = filepath.Join(p.Dir, "tls.key")
	}
	writePEM(t, keyFile, "PRIVATE KEY", kder)
	writePEM(t, certFile, "CERTIFICATE", der)
	return certFile, keyFile, cert
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
