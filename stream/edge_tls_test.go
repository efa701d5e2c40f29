package stream_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/clustertest"
)

// testPKI is a CA and the server and client certificates it signed, as
// PEM files in a temporary directory.
type testPKI struct {
	dir                       string
	caFile, certFile, keyFile string // the client's (an edge's leaf link)
	serverCert                tls.Certificate
	pool                      *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	p := testPKI{dir: t.TempDir(), pool: x509.NewCertPool()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bomstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool.AddCert(ca)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalPKCS8PrivateKey(key)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	}
	write := func(name string, b []byte) string {
		f := filepath.Join(p.dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	p.caFile = write("ca.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	srvCert, srvKey := issue(2, "hub", x509.ExtKeyUsageServerAuth)
	if p.serverCert, err = tls.X509KeyPair(srvCert, srvKey); err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey := issue(3, "edge-c1", x509.ExtKeyUsageClientAuth)
	p.certFile, p.keyFile = write("edge.crt", cliCert), write("edge.key", cliKey)
	return p
}

// An edge's leaf link to a hub that demands mutual TLS: the edge trusts
// the hub's CA (stream.hub.tlsCA) and presents its certificate
// (tlsCert/tlsKey); its changes reach the hub. An edge without a client
// certificate gets no link, and the hub none of its changes.
func TestEdgeLinkWithMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	hubSrv := clustertest.Start(t, 1, clustertest.Options{Domain: "hub", Leaf: true, Configure: func(o *server.Options) {
		o.LeafNode.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pki.serverCert}, ClientCAs: pki.pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
		o.LeafNode.TLSTimeout = 2
	}})
	leafURL := fmt.Sprintf("nats-leaf://127.0.0.1:%d", hubSrv.Nodes[0].LeafPort)
	f := &fleet{hubSrv: hubSrv, names: []string{"c1"}}
	f.edges = append(f.edges, stream.OpenEmbedded(t, stream.Config{Domain: "edge-c1",
		Hub: stream.LeafRemote{URL: leafURL, TLSCA: pki.caFile, TLSCert: pki.certFile, TLSKey: pki.keyFile}}))
	// Without a client certificate the hub refuses the link.
	noCert := stream.OpenEmbedded(t, stream.Config{Domain: "edge-c2", Hub: stream.LeafRemote{URL: leafURL, TLSCA: pki.caFile}})
	stream.WaitUntil(t, "the edge with a certificate linked over TLS", func() bool { return hubSrv.Nodes[0].Server().NumLeafNodes() >= 1 })
	hub, err := stream.Open(stream.TestContext(t), stream.Config{URL: hubSrv.URL(), Edges: []stream.Edge{{Domain: "edge-c1", Cluster: "c1"}, {Domain: "edge-c2", Cluster: "c2"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	f.hub = hub
	for i := range 5 {
		f.changeEdge(t, 0, i, 1)
	}
	w := stream.TestWorkload("w000")
	w.Cluster = "c2"
	if _, _, err := changelog.New(noCert).PublishChange(stream.TestContext(t), stream.Observed(t, w, "vllm:v1")); err != nil {
		t.Fatal(err)
	}
	f.waitCaughtUp(t, 2*time.Minute)
	if n := hubSrv.Nodes[0].Server().NumLeafNodes(); n != 1 {
		t.Fatalf("%d leaf links on the hub: the edge without a client certificate got one", n)
	}
	for subj := range changeHistory(t, hub) {
		if subj == schemas.ChangesSubject(w) {
			t.Fatalf("the hub holds a change of the edge it refused: %s", subj)
		}
	}
}
