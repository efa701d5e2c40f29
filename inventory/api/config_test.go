package api_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/api/apitest"
)

// handshake connects to addr trusting pki's CA alone and returns the
// serial number of the certificate the server showed.
func handshake(t *testing.T, addr string, pki *apitest.PKI) (string, error) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// A certificate renewed in place (cert-manager rewrites the Secret, the
// kubelet swaps the mounted files) is served from the next handshake on,
// without a restart; a pair caught half-written keeps the last good one.
func TestTLSCertificateReloadsWhenRenewed(t *testing.T) {
	pki := apitest.NewPKI(t, "bomstream test CA")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	_, _, first := pki.IssueServer(t, certFile, keyFile, "127.0.0.1")
	ln, err := api.Listen(api.Config{Listen: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{}, inventory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := ln.Addr().String()
	if got, err := handshake(t, addr, pki); err != nil || got != first.SerialNumber.String() {
		t.Fatalf("first certificate: serial %s, %v; want %s", got, err, first.SerialNumber)
	}

	_, _, renewed := pki.IssueServer(t, certFile, keyFile, "127.0.0.1")
	if got, err := handshake(t, addr, pki); err != nil || got != renewed.SerialNumber.String() {
		t.Errorf("after renewal: serial %s, %v; want the renewed %s", got, err, renewed.SerialNumber)
	}

	// Half-written: a new key beside the old certificate.
	other := t.TempDir()
	_, otherKey, _ := pki.IssueServer(t, filepath.Join(other, "c"), filepath.Join(other, "k"), "127.0.0.1")
	b, err := os.ReadFile(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := handshake(t, addr, pki); err != nil || got != renewed.SerialNumber.String() {
		t.Errorf("with a mismatched pair on disk: serial %s, %v; want the last good %s", got, err, renewed.SerialNumber)
	}
}

// Listen refuses a certificate it cannot load, naming the file.
func TestTLSListenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := api.Listen(api.Config{Listen: "127.0.0.1:0", TLSCert: bad, TLSKey: bad})
	if err == nil || !strings.Contains(err.Error(), "api.tlsCert") || !strings.Contains(err.Error(), bad) {
		t.Errorf("a certificate that is not PEM: %v", err)
	}
}
