package stream

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/schemas"
)

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

func openEmbedded(t testing.TB, cfg Config) *Bus {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// publishN publishes n messages on each of the subjects bomstream.boms.t.<s>,
// interleaved, with payload "<s>:<i>", and returns them in publish order.
func publishN(t *testing.T, b *Bus, subjects []string, n int) []string {
	t.Helper()
	ctx := testContext(t)
	var out []string
	for i := range n {
		for _, s := range subjects {
			m := nats.NewMsg(schemas.SubjectBOMsPrefix + "t." + s)
			m.Data = []byte(s + ":" + strconv.Itoa(i))
			if _, err := b.Writer().Publish(ctx, m, ""); err != nil {
				t.Fatal(err)
			}
			out = append(out, string(m.Data))
		}
	}
	return out
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sleepMs(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }
