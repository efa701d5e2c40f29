package stream

import (
	"context"
	"testing"
	"time"

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
