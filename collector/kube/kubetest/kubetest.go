// Package kubetest runs a real kube-apiserver and etcd for tests, through
// sigs.k8s.io/controller-runtime/pkg/envtest.
//
// The two binaries are built from the Go module proxy by `make kube-bins`
// (.ci/kube-bins.sh) into a cache directory outside the repository; the
// tests find them through KUBEBUILDER_ASSETS or in that cache directory.
// Without them a test skips with a message naming `make kube-bins`, except
// under CI=true, where it fails: CI must never mistake a missing API server
// for a passing suite.
package kubetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	sigsyaml "sigs.k8s.io/yaml"
)

// EnvAssets names the directory holding kube-apiserver and etcd.
const EnvAssets = "KUBEBUILDER_ASSETS"

// KubeVersion is the Kubernetes version `make kube-bins` builds; it names
// the default cache directory.
const KubeVersion = "v1.37.2"

// Env is a running API server with clients for it.
type Env struct {
	Config     *rest.Config
	Kubeconfig string // a kubeconfig file for the admin user
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	Ext        apiextensions.Interface
	env        *envtest.Environment
}

// Assets returns the directory with kube-apiserver and etcd, or why there is
// none.
func Assets() (string, error) {
	dirs := []string{os.Getenv(EnvAssets)}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache")
		}
	}
	if cache != "" {
		dirs = append(dirs, filepath.Join(cache, "bomstream", "kube-bins", KubeVersion))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if isExec(filepath.Join(d, "kube-apiserver")) && isExec(filepath.Join(d, "etcd")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no kube-apiserver and etcd in $%s or %s: run `make kube-bins`", EnvAssets, dirs[len(dirs)-1])
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Missing skips t (or, under CI=true, fails it) when the binaries are not
// there; it returns their directory.
func Missing(t testing.TB) string {
	t.Helper()
	dir, err := Assets()
	if err == nil {
		return dir
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("integration tests need a real API server: %v", err)
	}
	t.Skipf("skipping integration test: %v", err)
	return ""
}

// Start starts an API server for one test and stops it when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	dir := Missing(t)
	e, err := StartIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e
}

// StartIn starts an API server from the binaries in dir (for TestMain).
func StartIn(dir string) (*Env, error) {
	ctrllog.SetLogger(logr.Discard())
	te := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	e := &Env{Config: cfg, env: te}
	stop := func(err error) (*Env, error) { _ = te.Stop(); return nil, err }
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return stop(err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return stop(err)
	}
	if e.Ext, err = apiextensions.NewForConfig(cfg); err != nil {
		return stop(err)
	}
	f, err := os.CreateTemp("", "bomstream-kubeconfig-*.yaml")
	if err != nil {
		return stop(err)
	}
	if _, err := f.Write(te.KubeConfig); err != nil {
		return stop(errors.Join(err, f.Close()))
	}
	if err := f.Close(); err != nil {
		return stop(err)
	}
	e.Kubeconfig = f.Name()
	return e, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error {
	if e.Kubeconfig != "" {
		_ = os.Remove(e.Kubeconfig)
	}
	return e.env.Stop()
}

// ApplyCRDs installs the CRDs in the given files or directories with
// server-side apply (several upstream CRDs are over the 256 KiB that
// client-side apply can store) and waits until they are established.
func (e *Env) ApplyCRDs(ctx context.Context, paths ...string) ([]string, error) {
	var names []string
	for _, p := range paths {
		files := []string{p}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			m, _ := filepath.Glob(filepath.Join(p, "*.yaml"))
			files = m
		}
		for _, f := range files {
			docs, err := crdDocs(f)
			if err != nil {
				return names, err
			}
			for _, doc := range docs {
				var crd apiextensionsv1.CustomResourceDefinition
				if err := sigsyaml.Unmarshal(doc, &crd); err != nil {
					return names, fmt.Errorf("%s: %w", f, err)
				}
				if crd.Kind != "CustomResourceDefinition" {
					continue
				}
				js, err := sigsyaml.YAMLToJSON(doc)
				if err != nil {
					return names, fmt.Errorf("%s: %w", f, err)
				}
				force := true
				if _, err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, js,
					metav1.PatchOptions{FieldManager: "bomstream-test", Force: &force}); err != nil {
					return names, fmt.Errorf("apply %s (%s): %w", crd.Name, f, err)
				}
				names = append(names, crd.Name)
			}
		}
	}
	for _, n := range names {
		if err := e.waitEstablished(ctx, n); err != nil {
			return names, err
		}
	}
	return names, nil
}

func crdDocs(file string) ([][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := yaml.NewYAMLReader(bufio.NewReaderSize(f, 1<<20))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if strings.TrimSpace(string(doc)) != "" {
			out = append(out, doc)
		}
	}
}

func (e *Env) waitEstablished(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		crd, err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("crd %s not established: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DeleteCRD deletes a CRD and waits until it is gone.
func (e *Env) DeleteCRD(ctx context.Context, name string) error {
	err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := e.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("crd %s not deleted: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// SharedCRDs is the directory of the upstream CRDs (../shared/crds), found
// from $BOMSTREAM_CRDS or by searching upward from the working directory.
func SharedCRDs() (string, error) {
	if d := os.Getenv("BOMSTREAM_CRDS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		for _, c := range []string{filepath.Join(dir, "shared", "crds"), filepath.Join(dir, "..", "shared", "crds")} {
			if fi, err := os.Stat(c); err == nil && fi.IsDir() {
				return filepath.Clean(c), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no shared/crds above the working directory; set BOMSTREAM_CRDS")
		}
		dir = parent
	}
}
