package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/clustertest"
)

// TestPublishThroughLeaderChange is the defect of issue 19: on a 3-node
// cluster with R3 streams, the server leading CHANGES stops while 3,000
// workloads are appended (the collector's AppendChanges, PublishChange and
// the transformer's Publish to BOMS): every call must ride through the
// leader election, and every change and every BOM must be stored once.
func TestPublishThroughLeaderChange(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{})
	ctx := stream.TestContext(t)
	b, err := stream.Open(ctx, stream.Config{URL: c.URL(), Replicas: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	const workloads, batch = 3000, 100
	var done atomic.Int64
	stopped := make(chan *clustertest.Node, 1)
	go func() {
		for done.Load() < workloads/4 {
			if ctx.Err() != nil {
				return
			}
			stream.SleepMs(5)
		}
		nd := c.StreamLeader(schemas.StreamChanges)
		if nd != nil {
			nd.Stop()
		}
		stopped <- nd
	}()
	changes := changelog.New(b)
	for from := 0; from < workloads; from += batch {
		var appends []changelog.Append
		for i := from; i < from+batch; i++ {
			w := stream.TestWorkload(fmt.Sprintf("w%05d", i))
			appends = append(appends, changelog.Append{Event: stream.Observed(t, w, "vllm:a")})
		}
		for i, r := range changes.AppendChanges(ctx, appends) {
			if r.Err != nil {
				t.Fatalf("append %s: %v", appends[i].Event.Data.Workload, r.Err)
			}
			m := nats.NewMsg(schemas.SubjectBOMsPrefix + "dev." + appends[i].Event.Data.Workload.UID)
			m.Data = []byte("bom")
			if _, err := b.Writer().Publish(ctx, m, fmt.Sprintf("dev:%s:%d", appends[i].Event.Data.Workload.UID, r.Seq)); err != nil {
				t.Fatalf("publish bom: %v", err)
			}
		}
		// One more change of a workload of the batch, one by one.
		w := stream.TestWorkload(fmt.Sprintf("w%05d", from))
		if _, pub, err := changes.PublishChange(ctx, stream.Observed(t, w, "vllm:b")); err != nil || !pub {
			t.Fatalf("publish change %s: published %v, %v", w, pub, err)
		}
		done.Add(batch)
	}
	nd := <-stopped
	if nd == nil {
		t.Fatal("no leader of CHANGES was found to stop")
	}
	c.Restart(nd)

	wantChanges := uint64(workloads + workloads/batch)
	for _, s := range []struct {
		name string
		want uint64
	}{{schemas.StreamChanges, wantChanges}, {schemas.StreamBOMs, workloads}} {
		st, err := stream.JS(b).Stream(ctx, s.name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != s.want {
			t.Errorf("%s holds %d messages, want %d", s.name, info.State.Msgs, s.want)
		}
		for subj, n := range info.State.Subjects {
			want := uint64(1)
			if s.name == schemas.StreamChanges && subj[len(subj)-2:] == "00" {
				want = 2 // the batch's first workload changed twice
			}
			if n != want {
				t.Errorf("%s: %d messages on %s, want %d", s.name, n, subj, want)
			}
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("test context expired")
	}
}

// TestPublishUnderAnotherClusterRefused: on a hub whose user for cluster
// c1 may publish changes only under bomstream.changes.c1.>, a collector
// configured as c1 that writes a workload of cluster c2 is refused by the
// server, with an error that says so; its own cluster's changes go through.
func TestPublishUnderAnotherClusterRefused(t *testing.T) {
	const pass = "c1-Secret-pw"
	c := clustertest.Start(t, 1, clustertest.Options{Configure: func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "admin", Password: "admin-pw"},
			{Username: "c1", Password: pass, Permissions: stream.EdgePermissions("c1")},
		}
	}})
	ctx := stream.TestContext(t)
	admin, err := stream.Open(ctx, stream.Config{URL: c.URL(), User: "admin", Password: "admin-pw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	b, err := stream.Open(ctx, stream.Config{URL: c.URL(), User: "c1", Password: pass}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	own := stream.TestWorkload("mine")
	own.Cluster = "c1"
	if _, pub, err := changelog.New(b).PublishChange(ctx, stream.Observed(t, own, "vllm:a")); err != nil || !pub {
		t.Fatalf("own cluster: published %v, %v", pub, err)
	}
	other := stream.TestWorkload("theirs")
	other.Cluster = "c2"
	_, _, err = changelog.New(b).PublishChange(ctx, stream.Observed(t, other, "vllm:a"))
	if !errors.Is(err, stream.ErrPublishDenied) || !strings.Contains(err.Error(), "bomstream.changes.c2.theirs") {
		t.Fatalf("publishing as c2: %v", err)
	}
	if strings.Contains(err.Error(), pass) {
		t.Fatalf("the error leaks the password: %v", err)
	}
	t.Logf("refused: %v", err)
	res := changelog.New(b).AppendChanges(ctx, []changelog.Append{{Event: stream.Observed(t, other, "vllm:b")}})
	if !errors.Is(res[0].Err, stream.ErrPublishDenied) {
		t.Fatalf("appending as c2: %v", res[0].Err)
	}
	if m, err := admin.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(other)); err != nil || m != nil {
		t.Fatalf("CHANGES holds c2's workload written by c1: %v, %v", m, err)
	}
}
