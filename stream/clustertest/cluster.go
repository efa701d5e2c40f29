package clustertest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options shape a Cluster. The zero value is a cluster with no leaf-node
// listener, no domain and no authentication.
type Options struct {
	// Name of the cluster (routes); "bomstream-test" when empty.
	Name string
	// Domain is the JetStream domain; empty for none.
	Domain string
	// Leaf makes every node accept leaf-node connections.
	Leaf bool
	// Configure, when set, edits each node's options last (users,
	// permissions, TLS).
	Configure func(*server.Options)
}

// Cluster is n nats-servers routed to each other, each with JetStream.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
}

// Node is one server of a Cluster.
type Node struct {
	Name     string
	Port     int // client port
	LeafPort int // 0 without a leaf-node listener

	opts func() *server.Options
	mu   sync.Mutex
	srv  *server.Server
}

// Start runs n servers (1 is a single server with no routes) and waits
// until JetStream has a meta leader.
func Start(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	if o.Name == "" {
		o.Name = "bomstream-test"
	}
	c := &Cluster{t: t}
	clientPorts, routePorts, leafPorts := FreePorts(t, n), FreePorts(t, n), FreePorts(t, n)
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i]))
	}
	for i := range n {
		nd := &Node{Name: fmt.Sprintf("%s-n%d", o.Name, i+1), Port: clientPorts[i]}
		if o.Leaf {
			nd.LeafPort = leafPorts[i]
		}
		store := filepath.Join(t.TempDir(), "js")
		routePort, name := routePorts[i], nd.Name
		nd.opts = func() *server.Options {
			so := &server.Options{
				ServerName: name, Host: "127.0.0.1", Port: nd.Port,
				JetStream: true, StoreDir: store, JetStreamDomain: o.Domain,
				NoSigs: true, NoLog: true,
			}
			if n > 1 {
				so.Cluster = server.ClusterOpts{Name: o.Name, Host: "127.0.0.1", Port: routePort}
				so.Routes = server.RoutesFromStr(strings.Join(routes, ","))
			}
			if nd.LeafPort != 0 {
				// NoAdvertise: a leaf learns no other address of the hub than
				// the one it dials, so a Proxy in between really holds the link.
				so.LeafNode = server.LeafNodeOpts{Host: "127.0.0.1", Port: nd.LeafPort, NoAdvertise: true}
			}
			if o.Configure != nil {
				o.Configure(so)
			}
			return so
		}
		c.Nodes = append(c.Nodes, nd)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, nd := range c.Nodes {
		wg.Go(func() { errs[i] = nd.start() })
	}
	wg.Wait()
	t.Cleanup(c.shutdown)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.WaitJetStream()
	return c
}

// URL is the comma-separated client URL list of every node, as a client
// of the cluster is configured.
func (c *Cluster) URL() string {
	var urls []string
	for _, nd := range c.Nodes {
		urls = append(urls, nd.URL())
	}
	return strings.Join(urls, ",")
}

// LeafURL is the leaf-node URL list of every node.
func (c *Cluster) LeafURL() string {
	var urls []string
	for _, nd := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats-leaf://127.0.0.1:%d", nd.LeafPort))
	}
	return strings.Join(urls, ",")
}

// URL is the node's client URL.
func (nd *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", nd.Port) }

// Server is the running server, nil while the node is stopped.
func (nd *Node) Server() *server.Server {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.srv
}

func (nd *Node) start() error {
	srv, err := server.NewServer(nd.opts())
	if err != nil {
		return fmt.Errorf("node %s: %w", nd.Name, err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("node %s: not ready after 30s", nd.Name)
	}
	nd.mu.Lock()
	nd.srv = srv
	nd.mu.Unlock()
	return nil
}

// Stop shuts the node down (its store stays for Restart).
func (nd *Node) Stop() {
	nd.mu.Lock()
	srv := nd.srv
	nd.srv = nil
	nd.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts a stopped node again on its ports and store.
func (c *Cluster) Restart(nd *Node) {
	c.t.Helper()
	if err := nd.start(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) shutdown() {
	for _, nd := range c.Nodes {
		nd.Stop()
	}
}

// StreamLeader is the node leading stream (account $G), nil when none does
// right now.
func (c *Cluster) StreamLeader(stream string) *Node {
	for _, nd := range c.Nodes {
		if srv := nd.Server(); srv != nil {
			if len(c.Nodes) == 1 || srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				return nd
			}
		}
	}
	return nil
}

// WaitJetStream waits (at most a minute) until the running nodes agree on
// a JetStream meta leader.
func (c *Cluster) WaitJetStream() {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, nd := range c.Nodes {
			srv := nd.Server()
			if srv != nil && (len(c.Nodes) == 1 || srv.JetStreamIsLeader() && len(srv.JetStreamClusterPeers()) == c.running()) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatal("no JetStream meta leader after a minute")
}

func (c *Cluster) running() int {
	n := 0
	for _, nd := range c.Nodes {
		if nd.Server() != nil {
			n++
		}
	}
	return n
}

// FreePorts reserves n distinct loopback ports: it listens on each and
// closes it, so a server started right after can bind it.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserve a port: %v", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

// MustURL parses u or fails t.
func MustURL(t testing.TB, u string) *url.URL {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
