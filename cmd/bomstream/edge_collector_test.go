package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/clustertest"
)

// An edge is the collector and a leaf JetStream, nothing else: `bomstream
// collector` with stream.domain and stream.hub runs the embedded server
// under its own domain, linked to the hub, and the hub's CHANGES (which
// sources the edge) receives the cluster's workload changes; no BOM is
// rendered at the edge.
func TestCollectorAsAnEdge(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := int32(1)
	_, err := env.Client.AppsV1().Deployments("ml").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "chat"},
		Spec: appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "chat"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "chat"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai:v0.10.1", Args: []string{"--model", "Qwen/Qwen3-0.6B"}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	hubSrv := clustertest.Start(t, 1, clustertest.Options{Domain: "hub", Leaf: true})
	hub, err := stream.Open(ctx, stream.Config{URL: hubSrv.URL(), Edges: []stream.Edge{{Domain: "edge-a", Cluster: "a"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)

	dir := t.TempDir()
	conf := filepath.Join(dir, "edge.yaml")
	writeFile(t, conf, fmt.Sprintf("stream:\n  domain: edge-a\n  hub: {url: %q}\n", fmt.Sprintf("nats-leaf://127.0.0.1:%d", hubSrv.Nodes[0].LeafPort)))
	c := newCLI(t)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan result, 1)
	go func() {
		done <- c.runCtx(runCtx, "collector", "--config", conf, "--cluster", "a", "--kubeconfig", env.Kubeconfig,
			"--all-namespaces", "--keep-executable-pages", "--data-dir", filepath.Join(dir, "data"))
	}()
	defer func() {
		cancel()
		select {
		case r := <-done:
			if r.err != nil && !strings.Contains(r.err.Error(), "context canceled") {
				t.Errorf("collector: %v\n%s", r.err, tail(r.stderr, 3000))
			}
		case <-time.After(2 * waitFor):
			t.Error("the collector did not stop")
		}
	}()
	var subjects []string
	eventually(t, "the hub holds the edge's change of ml/Deployment/chat", func() bool {
		subjects = subjects[:0]
		_ = hub.Reader().Headers(ctx, schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
			subjects = append(subjects, m.Subject)
			return nil
		})
		return len(subjects) > 0
	})
	for _, s := range subjects {
		if !strings.HasPrefix(s, schemas.SubjectChangesPrefix+"a.") {
			t.Fatalf("the hub holds a change under %s, not cluster a's subjects", s)
		}
	}
	if w, err := changelog.New(hub).FindWorkload(ctx, "a", "ml", "Deployment", "chat"); err != nil || w.UID == "" {
		t.Fatalf("the hub's name index does not know a/ml/Deployment/chat: %v", err)
	}
	// Nothing was rendered at the edge: its store has no BOM.
	cancel()
	r := <-done
	done <- r
	edge := openBus(t, filepath.Join(dir, "data"), "")
	n := 0
	_ = edge.Reader().Headers(ctx, schemas.StreamBOMs, "", 0, func(*jetstream.RawStreamMsg) error { n++; return nil })
	if n != 0 {
		t.Errorf("the edge rendered %d BOMs; an edge only collects", n)
	}
}
