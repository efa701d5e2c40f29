package stream_test

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/clustertest"
)

// fleet is a hub and edges linked through proxies a test can cut.
type fleet struct {
	hub     *stream.Bus
	hubSrv  *clustertest.Cluster
	edges   []*stream.Bus
	proxies []*clustertest.Proxy
	names   []string // the edges' cluster names
}

// startFleet runs a hub (hubNodes servers, domain "hub", a leaf-node
// listener) and n edges: embedded buses under domain "edge-<cluster>",
// each linked to the hub's leaf port through its own proxy.
func startFleet(t *testing.T, hubNodes, n int) *fleet {
	t.Helper()
	ctx := stream.TestContext(t)
	f := &fleet{hubSrv: clustertest.Start(t, hubNodes, clustertest.Options{Domain: "hub", Leaf: true})}
	var edges []stream.Edge
	for i := range n {
		cluster := fmt.Sprintf("c%d", i+1)
		f.names = append(f.names, cluster)
		edges = append(edges, stream.Edge{Domain: "edge-" + cluster, Cluster: cluster})
		p := clustertest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", f.hubSrv.Nodes[i%hubNodes].LeafPort))
		f.proxies = append(f.proxies, p)
		f.edges = append(f.edges, stream.OpenEmbedded(t, stream.Config{Domain: "edge-" + cluster, Hub: stream.LeafRemote{URL: "nats-leaf://" + p.Addr()}}))
	}
	// The hub's sources find the edges at once when their links are up;
	// an edge that connects later is found after the server's source
	// retry backoff (up to 2 minutes), which the tests need not wait for.
	stream.WaitUntil(t, "every edge linked to the hub", func() bool {
		leafs := 0
		for _, nd := range f.hubSrv.Nodes {
			leafs += nd.Server().NumLeafNodes()
		}
		return leafs == n
	})
	hub, err := stream.Open(ctx, stream.Config{URL: f.hubSrv.URL(), Replicas: hubNodes, Edges: edges}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	f.hub = hub
	return f
}

// changeHistory is every change of a stream, per workload subject, as the
// input hashes in stream order.
func changeHistory(t *testing.T, b *stream.Bus) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := b.Reader().Headers(stream.TestContext(t), schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
		out[m.Subject] = append(out[m.Subject], m.Header.Get(schemas.HeaderInputHash))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changeEdge appends a new state of workload i of edge e.
func (f *fleet) changeEdge(t *testing.T, e, i, version int) {
	t.Helper()
	w := stream.TestWorkload(fmt.Sprintf("w%03d", i))
	w.Cluster = f.names[e]
	if _, pub, err := changelog.New(f.edges[e]).PublishChange(stream.TestContext(t), stream.Observed(t, w, fmt.Sprintf("vllm:v%d", version))); err != nil || !pub {
		t.Fatalf("edge %s: publish change of %s: published %v, %v", f.names[e], w, pub, err)
	}
}

// waitCaughtUp waits until the hub holds, per workload, exactly each
// edge's history, and fails naming the first difference.
func (f *fleet) waitCaughtUp(t *testing.T, within time.Duration) {
	t.Helper()
	want := map[string][]string{}
	for _, e := range f.edges {
		maps.Copy(want, changeHistory(t, e))
	}
	deadline := time.Now().Add(within)
	for {
		got := changeHistory(t, f.hub)
		diff := ""
		for subj, h := range want {
			if strings.Join(got[subj], ",") != strings.Join(h, ",") {
				diff = fmt.Sprintf("%s: hub has %d changes %v, the edge %d %v", subj, len(got[subj]), got[subj], len(h), h)
				break
			}
		}
		if diff == "" && len(got) != len(want) {
			diff = fmt.Sprintf("hub has %d workloads, the edges %d", len(got), len(want))
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub not caught up after %s: %s", within, diff)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// linkCut is how long TestEdgesFeedHubThroughOutage keeps the hub
// unreachable: the 60 s; BOMSTREAM_LINK_CUT shortens it locally.
func linkCut(t *testing.T) time.Duration {
	if s := os.Getenv("BOMSTREAM_LINK_CUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("BOMSTREAM_LINK_CUT: %v", err)
		}
		return d
	}
	return 60 * time.Second
}

// TestEdgesFeedHubThroughOutage: three edges (clusters c1..c3, each its own
// embedded JetStream under its own domain, each a leaf of the hub) sourced
// into one hub. The links are cut for linkCut while every edge keeps
// appending changes, then restored: the hub holds every change of every
// edge, in order per workload, once, and its name index knows every
// workload.
func TestEdgesFeedHubThroughOutage(t *testing.T) {
	f := startFleet(t, 1, 3)
	const workloads = 20
	for e := range f.edges {
		for i := range workloads {
			f.changeEdge(t, e, i, 0)
		}
	}
	start := time.Now()
	f.waitCaughtUp(t, 2*time.Minute)
	t.Logf("hub caught up with the first changes in %s", time.Since(start))

	for _, p := range f.proxies {
		p.Cut()
	}
	cut := time.Now()
	var wg sync.WaitGroup
	for e := range f.edges {
		wg.Go(func() {
			for v := 1; time.Since(cut) < linkCut(t) || v < 3; v++ {
				for i := range workloads {
					f.changeEdge(t, e, i, v)
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	// Nothing of the outage reached the hub.
	if got := changeHistory(t, f.hub); len(got[schemas.SubjectChangesPrefix+"c1.w000"]) != 1 {
		t.Fatalf("the hub saw %d changes of c1/w000 while the link was cut", len(got[schemas.SubjectChangesPrefix+"c1.w000"]))
	}
	for _, p := range f.proxies {
		p.Restore()
	}
	start = time.Now()
	f.waitCaughtUp(t, 3*time.Minute)
	t.Logf("hub caught up %s after the links came back", time.Since(start))

	for _, cluster := range f.names {
		var uids []string
		var err error
		stream.WaitUntil(t, "the hub's name index to know "+cluster+"/w007", func() bool {
			uids, err = changelog.New(f.hub).WorkloadUIDs(stream.TestContext(t), cluster, "ml", "Deployment", "vllm-w007")
			return err != nil || len(uids) > 0
		})
		if err != nil || len(uids) != 1 || uids[0] != "w007" {
			t.Errorf("hub name index for %s: %v, %v", cluster, uids, err)
		}
	}
}

// TestEdgeWritingAsAnotherCluster: an edge sourced for cluster c1 that
// writes a change under c2's subject is not heard by the hub; its own
// cluster's changes still are.
func TestEdgeWritingAsAnotherCluster(t *testing.T) {
	f := startFleet(t, 1, 2)
	ctx := stream.TestContext(t)
	forged := stream.TestWorkload("forged")
	forged.Cluster = "c2"
	if _, _, err := changelog.New(f.edges[0]).PublishChange(ctx, stream.Observed(t, forged, "vllm:x")); err != nil {
		t.Fatal(err)
	}
	f.changeEdge(t, 0, 1, 0)
	f.changeEdge(t, 1, 2, 0)
	deadline := time.Now().Add(time.Minute)
	for {
		got := changeHistory(t, f.hub)
		if len(got[schemas.SubjectChangesPrefix+"c1.w001"]) == 1 && len(got[schemas.SubjectChangesPrefix+"c2.w002"]) == 1 {
			if n := len(got[schemas.SubjectChangesPrefix+"c2.forged"]); n != 0 {
				t.Fatalf("the hub took %d changes c1's edge wrote as c2", n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub never got the edges' own changes: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSameNameInTwoClusters: a workload of the same namespace/kind/name
// (even the same uid) in two clusters is two workloads on the hub: two
// subjects, two histories, and the name index finds each by its cluster.
func TestSameNameInTwoClusters(t *testing.T) {
	f := startFleet(t, 1, 2)
	f.changeEdge(t, 0, 5, 0)
	f.changeEdge(t, 1, 5, 0)
	f.changeEdge(t, 1, 5, 1)
	f.waitCaughtUp(t, time.Minute)
	got := changeHistory(t, f.hub)
	if a, b := got[schemas.SubjectChangesPrefix+"c1.w005"], got[schemas.SubjectChangesPrefix+"c2.w005"]; len(a) != 1 || len(b) != 2 {
		t.Fatalf("hub histories: c1 %v, c2 %v", a, b)
	}
	for _, cluster := range f.names {
		var w schemas.Workload
		var err error
		stream.WaitUntil(t, "the hub's name index to know "+cluster+"/vllm-w005", func() bool {
			w, err = changelog.New(f.hub).FindWorkload(stream.TestContext(t), cluster, "ml", "Deployment", "vllm-w005")
			return err == nil
		})
		if w.Cluster != cluster || w.UID != "w005" {
			t.Errorf("FindWorkload in %s: %+v", cluster, w)
		}
	}
}
