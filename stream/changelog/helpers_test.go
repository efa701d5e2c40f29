package changelog

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

// testBus is a bus and its change log, for tests that write through the
// one and look at the stream through the other.
type testBus struct {
	*stream.Bus
	*Log
	js jetstream.JetStream
}

func openEmbedded(t testing.TB, cfg stream.Config) testBus {
	t.Helper()
	b := bustest.Open(t, cfg)
	_, js := b.Raw()
	return testBus{Bus: b, Log: New(b), js: js}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testWorkload(uid string) schemas.Workload {
	return schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "vllm-" + uid, UID: uid}
}

// observed is an observation of w whose inputs (and so inputHash) depend on image.
func observed(t testing.TB, w schemas.Workload, image string) schemas.WorkloadChange {
	t.Helper()
	in := &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{{
			Name: "main", Locator: "spec.template",
			Containers: []schemas.Container{{Name: "vllm", Locator: "spec.template.spec.containers[0]", Image: image}},
		}},
	}
	ev, err := schemas.NewObserved("test", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), in)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// publishAt is PublishChange's conditional append of ev after lastSeq,
// without its reading and deciding.
func publishAt(ctx context.Context, b testBus, ev schemas.WorkloadChange, data []byte, lastSeq uint64) (stream.PubAck, error) {
	return b.Writer().PublishAfter(ctx, changeMsg(ev, data, nil), schemas.ChangeMsgID(ev.Data.Workload, lastSeq), lastSeq)
}
