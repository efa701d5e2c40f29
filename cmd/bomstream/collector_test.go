package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
)

// `run --kubeconfig FILE --once` lists a real cluster, publishes, drains
// the pipeline into the file sink and prints the summary table; a second run
// writes nothing; a deleted workload gets its tombstone.
func TestRunKubeconfigOnce(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	for _, ns := range []string{"ml", "web"} {
		labels := map[string]string{"bomstream.dev/enabled": "true"}
		if ns == "web" {
			labels = nil
		}
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(ns, name, image string, args ...string) {
		rep := int32(1)
		_, err := env.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image, Args: args}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("ml", "chat", "vllm/vllm-openai:v0.10.1", "--model", "Qwen/Qwen3-0.6B")
	mk("ml", "cache", "redis:7")
	mk("web", "other", "vllm/vllm-openai:v0.10.1", "--model", "Qwen/Qwen3-0.6B") // not opted in

	c := newCLI(t)
	dir := t.TempDir()
	sinkDir, dataDir := filepath.Join(dir, "boms"), filepath.Join(dir, "data")
	args := []string{"run", "--kubeconfig", env.Kubeconfig, "--cluster", "envtest", "--once", "--sink-dir", sinkDir, "--data-dir", dataDir}
	start := time.Now()
	r := c.mustRun(args...)
	t.Logf("run --kubeconfig --once took %s:\n%s", time.Since(start).Round(time.Millisecond), r.stdout)
	mustContain(t, "summary", r.stdout, "WORKLOAD", "ml/Deployment/chat", "vllm@0.10.1", "Qwen/Qwen3-0.6B",
		"2 workloads read, 1 serving (one BOM each)", "2 new events, 0 tombstones", "sink file: 1 exported")
	if strings.Contains(r.stdout, "web/") {
		t.Errorf("a namespace that did not opt in was read:\n%s", r.stdout)
	}
	if n := countBOMFiles(t, sinkDir); n != 1 {
		t.Errorf("BOM files = %d, want 1", n)
	}

	// Again: nothing new.
	r = c.mustRun(args...)
	mustContain(t, "second summary", r.stdout, "0 new events, 0 tombstones", "sink file: 0 exported")

	// All namespaces: the other one too.
	r = c.mustRun(append(args, "--all-namespaces")...)
	mustContain(t, "all namespaces", r.stdout, "web/Deployment/other", "sink file: 1 exported")

	if err := env.Client.AppsV1().Deployments("ml").Delete(ctx, "chat", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = c.mustRun(append(args, "--all-namespaces")...)
	mustContain(t, "after the deletion", r.stdout, "1 tombstones", "sink file: 0 exported, 1 tombstones")
	if st := sinkState(t, filepath.Join(sinkDir, "envtest", "ml", "Deployment", "chat")); st.Tombstone != "deleted" {
		t.Errorf("no tombstone in the file sink: state %+v", st)
	}
}

func TestCollectorCommandNeedsCluster(t *testing.T) {
	c := newCLI(t)
	r := c.run("collector", "--kubeconfig", filepath.Join(t.TempDir(), "none"), "--data-dir", t.TempDir())
	if r.err == nil || !strings.Contains(r.err.Error(), "--cluster is required") {
		t.Errorf("collector without --cluster: %v", r.err)
	}
	r = c.run("collector", "--cluster", "a.b", "--data-dir", t.TempDir())
	if r.err == nil || !strings.Contains(r.err.Error(), "cluster") {
		t.Errorf("collector with an invalid cluster: %v", r.err)
	}
	r = c.run("run", "--kubeconfig", "x", "--manifests", t.TempDir(), "--data-dir", t.TempDir())
	if r.err == nil || !strings.Contains(r.err.Error(), "give one source") {
		t.Errorf("two sources: %v", r.err)
	}
	r = c.run("collector", "--cluster", "c", "--namespaces", "Bad_NS", "--data-dir", t.TempDir())
	if r.err == nil || !strings.Contains(r.err.Error(), "kubernetes.namespaces[0]") {
		t.Errorf("bad namespace: %v", r.err)
	}
}
