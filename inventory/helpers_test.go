package inventory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer"
)

// fleet publishes real BOMs, rendered by the transformer, to a real bus.
type fleet struct {
	t   *testing.T
	bus *stream.Bus
	r   *transformer.Renderer
	seq map[string]uint64 // change sequence per uid
}

func newFleet(t *testing.T, bus *stream.Bus) *fleet {
	r, err := transformer.NewRenderer(transformer.Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, bus: bus, r: r, seq: map[string]uint64{}}
}

// spec is one Deployment serving a model.
type spec struct {
	ns, name, image, model, revision, digest string
	declared                                 bool // a vllm serve command
}

func (s spec) id() schemas.Workload {
	return schemas.Workload{Cluster: "c1", Namespace: s.ns, APIVersion: "apps/v1", Kind: "Deployment", Name: s.name, UID: "uid-" + s.name}
}

// serve renders s as observed at `at` and publishes its BOM.
func (f *fleet) serve(s spec, at time.Time) {
	f.t.Helper()
	c := schemas.Container{Name: "main", Locator: "spec.template.spec.containers[0]", Image: s.image,
		Env: []schemas.EnvVar{{Name: "MODEL_ID", Value: s.model}}}
	if s.declared {
		c.Command, c.Args, c.Env = []string{"vllm", "serve"}, []string{s.model}, nil
		if s.revision != "" {
			c.Args = append(c.Args, "--revision", s.revision)
		}
	}
	in := &schemas.Inputs{Workload: s.id(), Source: "cluster",
		Components: []schemas.Component{{Name: s.name, Locator: "spec.template", Containers: []schemas.Container{c}}}}
	if s.digest != "" {
		in.Digests = []schemas.ImageDigest{{Image: s.image, Digest: s.digest, Locator: "status.containerStatuses[0].imageID"}}
	}
	ev, err := schemas.NewObserved("test", at, in)
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.r.Render(ev)
	if err != nil || res.BOM == nil {
		f.t.Fatalf("render %s: %v %s", s.name, err, res.Skipped)
	}
	f.publish(&schemas.BOMMessage{Workload: s.id(), EventTime: at, BomHash: res.BomHash, InputHash: ev.Data.InputHash, BOM: res.BOM})
}

// tombstone publishes a tombstone of s observed at `at`.
func (f *fleet) tombstone(s spec, reason string, at time.Time) {
	f.t.Helper()
	f.publish(&schemas.BOMMessage{Workload: s.id(), EventTime: at, Tombstone: reason})
}

func (f *fleet) publish(m *schemas.BOMMessage) {
	f.t.Helper()
	f.seq[m.Workload.UID] += 3 // change sequences need not be dense
	m.ChangeSeq = f.seq[m.Workload.UID]
	h, body, err := m.Encode()
	if err != nil {
		f.t.Fatal(err)
	}
	msg := nats.NewMsg(m.Subject())
	msg.Header, msg.Data = h, body
	if _, err := f.bus.Writer().Publish(context.Background(), msg, m.MsgID()); err != nil {
		f.t.Fatal(err)
	}
}

func load(t *testing.T, bus *stream.Bus) *Index {
	t.Helper()
	ix := New()
	if _, err := ix.Load(context.Background(), bus.Reader()); err != nil {
		t.Fatal(err)
	}
	return ix
}

func find(t *testing.T, ix *Index, now time.Time, fields map[string][]string) []string {
	t.Helper()
	q, err := ParseQuery(fields, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ix.Find(q) {
		names = append(names, e.Name)
	}
	return names
}

func q(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = append(m[kv[i]], kv[i+1])
	}
	return m
}

func digestOf(i int) string { return fmt.Sprintf("sha256:%064x", i) }
