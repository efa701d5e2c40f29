package stream_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/bomstream/bomstream/stream/clustertest"
)

// The hub's nats-server configuration in docs/fleet.md works: nats-server
// reads it (with this test's certificates, store and ports in place of
// the document's), and a server started from it runs JetStream in domain
// hub with TLS on its listeners, leaf-node users per edge, and a collector
// user that may publish only its own cluster's changes.
func TestFleetDocHubConfigWorks(t *testing.T) {
	doc, err := os.ReadFile("../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "### A hub's nats-server configuration")
	if !ok {
		t.Fatal("docs/fleet.md has no hub configuration section")
	}
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	pki := newTestPKI(t)
	// Routes to three route ports, of which only this server's listens:
	// the other two nodes of the documented cluster are not started.
	ports := clustertest.FreePorts(t, 3)
	routes := fmt.Sprintf("nats-route://127.0.0.1:%d, nats-route://127.0.0.1:%d, nats-route://127.0.0.1:%d", ports[0], ports[1], ports[2])
	conf := strings.NewReplacer(
		"/etc/nats/tls/tls.crt", pki.certFile, "/etc/nats/tls/tls.key", pki.keyFile, "/etc/nats/tls/ca.crt", pki.caFile,
		"/data/jetstream", filepath.Join(t.TempDir(), "js"),
		"0.0.0.0:4222", "127.0.0.1:-1", "0.0.0.0:6222", fmt.Sprintf("127.0.0.1:%d", ports[0]), "0.0.0.0:7422", "127.0.0.1:-1",
		"nats-route://hub-1:6222, nats-route://hub-2:6222, nats-route://hub-3:6222", routes,
	).Replace(block)
	for _, v := range []string{"EDGE_A_PASSWORD", "EDGE_B_PASSWORD", "BOMSTREAM_PASSWORD", "COLLECTOR_C_PASSWORD"} {
		t.Setenv(v, "s3cret-"+strings.ToLower(v))
	}
	path := filepath.Join(t.TempDir(), "hub.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the documented configuration: %v", err)
	}
	if opts.JetStreamDomain != "hub" || opts.TLSConfig == nil || opts.Cluster.TLSConfig == nil || opts.LeafNode.TLSConfig == nil ||
		len(opts.LeafNode.Users) != 2 || opts.Cluster.Name != "bomstream-hub" {
		t.Fatalf("documented configuration read as: domain %q, TLS client %v cluster %v leaf %v, %d leaf users, cluster %q",
			opts.JetStreamDomain, opts.TLSConfig != nil, opts.Cluster.TLSConfig != nil, opts.LeafNode.TLSConfig != nil, len(opts.LeafNode.Users), opts.Cluster.Name)
	}
	var collector *server.User
	for _, u := range opts.Users {
		if u.Username == "collector-c" {
			collector = u
		}
	}
	if collector == nil || collector.Permissions == nil || collector.Permissions.Publish == nil ||
		!slices.Contains(collector.Permissions.Publish.Allow, "bomstream.changes.c.>") || slices.Contains(collector.Permissions.Publish.Allow, "bomstream.changes.>") {
		t.Fatalf("the collector user may not publish only its own cluster's changes: %+v", collector)
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("a server started from the documented configuration is not ready")
	}
	if !srv.JetStreamEnabled() {
		t.Fatal("JetStream is off on a server started from the documented configuration")
	}
}
