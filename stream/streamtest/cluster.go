package streamtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/stream/clustertest"
)

// Cluster is n nats-server processes routed to each other, each with
// JetStream: what an operator runs, stopped the way an operator (or a
// failing machine) stops one.
type Cluster struct {
	Nodes []*Node
}

// Node is one nats-server process of a Cluster.
type Node struct {
	Name string // its server_name, as stream info names a leader
	URL  string // its client URL
	cmd  *exec.Cmd
	done chan struct{}
	logs SyncBuffer
}

// StartCluster starts n nats-server processes (the binary of ServerBinary)
// in one cluster on loopback ports, each with its store in a temporary
// directory, and waits until JetStream answers on every one. They are
// stopped when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := ServerBinary(t)
	clientPorts, routePorts := clustertest.FreePorts(t, n), clustertest.FreePorts(t, n)
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	c := &Cluster{}
	for i := range n {
		dir := t.TempDir()
		nd := &Node{Name: fmt.Sprintf("n%d", i+1), URL: fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]), done: make(chan struct{})}
		conf := filepath.Join(dir, "nats.conf")
		body := fmt.Sprintf(`server_name: %s
listen: "127.0.0.1:%d"
jetstream { store_dir: %q }
cluster { name: bomstream-test, listen: "127.0.0.1:%d", routes: [%s] }
`, nd.Name, clientPorts[i], filepath.Join(dir, "js"), routePorts[i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		nd.cmd = exec.Command(bin, "-c", conf)
		nd.cmd.Stdout, nd.cmd.Stderr = &nd.logs, &nd.logs
		if err := nd.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		go func() { _ = nd.cmd.Wait(); close(nd.done) }()
		c.Nodes = append(c.Nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.Nodes {
			nd.Stop()
		}
		if t.Failed() {
			for _, nd := range c.Nodes {
				t.Logf("nats-server %s output (tail):\n%s", nd.Name, tail(nd.logs.String(), 4000))
			}
		}
	})
	for _, nd := range c.Nodes {
		WaitJetStream(t, nd.URL)
	}
	return c
}

// URL is the comma-separated client URL list of every node, as a client
// of the cluster is configured.
func (c *Cluster) URL() string {
	var urls []string
	for _, nd := range c.Nodes {
		urls = append(urls, nd.URL)
	}
	return strings.Join(urls, ",")
}

// Stop ends the node's process with SIGTERM (a shutdown without handing
// its leaderships over, as a stopped pod's server does unless told to
// enter lame duck mode) and waits for it, killing it after 30 seconds.
func (nd *Node) Stop() {
	if nd.cmd.Process == nil {
		return
	}
	_ = nd.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-nd.done:
	case <-time.After(30 * time.Second):
		_ = nd.cmd.Process.Kill()
		<-nd.done
	}
}

// StreamLeader is the node leading stream, asked of the cluster through
// a client; nil when no leader is known.
func (c *Cluster) StreamLeader(ctx context.Context, stream string) (*Node, error) {
	nc, err := nats.Connect(c.URL())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info := s.CachedInfo()
	if info.Cluster == nil {
		return nil, fmt.Errorf("stream %s: no cluster information", stream)
	}
	for _, nd := range c.Nodes {
		if nd.Name == info.Cluster.Leader {
			return nd, nil
		}
	}
	return nil, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
