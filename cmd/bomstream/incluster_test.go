package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
)

// `run --in-cluster` (the Helm chart's all-in-one pod) takes the cluster as
// its source with no kubeconfig file: the client configuration of the
// environment, which in a pod is its service account. Here the environment
// is $KUBECONFIG, since a test cannot be a pod; outside a pod and without
// one it fails on the client configuration, not for want of a source.
func TestRunInCluster(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "ml", Labels: map[string]string{"bomstream.dev/enabled": "true"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := int32(1)
	if _, err := env.Client.AppsV1().Deployments("ml").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "chat"},
		Spec: appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "chat"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "chat"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai:v0.10.1", Args: []string{"--model", "Qwen/Qwen3-0.6B"}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir() // no ~/.kube/config
	t.Setenv("HOME", home)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	c := newCLI(t)
	dir := t.TempDir()
	args := []string{"run", "--in-cluster", "--cluster", "envtest", "--once",
		"--sink-dir", filepath.Join(dir, "boms"), "--data-dir", filepath.Join(dir, "data")}

	t.Setenv("KUBECONFIG", "")
	r := c.run(args...)
	if r.err == nil || strings.Contains(r.err.Error(), "no source") || !strings.Contains(r.err.Error(), "kubernetes client config") {
		t.Errorf("run --in-cluster outside a pod: want the client configuration's error, got %v", r.err)
	}

	t.Setenv("KUBECONFIG", env.Kubeconfig)
	r = c.mustRun(args...)
	mustContain(t, "summary", r.stdout, "ml/Deployment/chat", "vllm@0.10.1", "sink file: 1 exported")

	r = c.run("run", "--in-cluster", "--kubeconfig", env.Kubeconfig, "--data-dir", t.TempDir())
	if r.err == nil || !strings.Contains(r.err.Error(), "--kubeconfig and --in-cluster") {
		t.Errorf("--in-cluster with --kubeconfig: %v", r.err)
	}
	r = c.run("run", "--in-cluster", "--manifests", t.TempDir(), "--data-dir", t.TempDir())
	if r.err == nil || !strings.Contains(r.err.Error(), "give one source") {
		t.Errorf("--in-cluster with --manifests: %v", r.err)
	}
}
