package kyverno

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
)

// kyvernoVersion is the Kyverno release whose CRDs the policies are
// checked against (type: SigstoreBundle needs 1.13 or later).
const kyvernoVersion = "v1.19.1"

// kyvernoCRDs downloads the Kyverno module from the Go module proxy (or
// finds it in the module cache) and returns its CRD directory. Under
// CI=true a failure fails the test; elsewhere it skips it, saying why.
func kyvernoCRDs(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/kyverno/kyverno@"+kyvernoVersion).Output()
	var mod struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err == nil && mod.Error != "" {
		err = &os.PathError{Op: "go mod download", Path: "github.com/kyverno/kyverno@" + kyvernoVersion, Err: os.ErrNotExist}
	}
	if err != nil || mod.Dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Kyverno CRDs come from github.com/kyverno/kyverno@%s: %v %s", kyvernoVersion, err, mod.Error)
		}
		t.Skipf("github.com/kyverno/kyverno@%s not available: %v %s", kyvernoVersion, err, mod.Error)
	}
	return filepath.Join(mod.Dir, "config", "crds", "kyverno")
}

var clusterPolicies = schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}

// dryRun applies a policy server-side with dryRun=All and strict field
// validation: what `kubectl apply --dry-run=server --validate=strict` does.
func dryRun(ctx context.Context, e *kubetest.Env, doc []byte) error {
	js, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	var meta struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return err
	}
	force := true
	_, err = e.Dynamic.Resource(clusterPolicies).Patch(ctx, meta.Metadata.Name, types.ApplyPatchType, js, metav1.PatchOptions{
		FieldManager: "bomstream-policy-test", Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	return err
}

func TestPoliciesDryRun(t *testing.T) {
	klog.LogToStderr(false) // the server's deprecation warning of ClusterPolicy, once per request
	klog.SetOutput(io.Discard)
	crds := kyvernoCRDs(t)
	e := kubetest.Start(t)
	ctx := context.Background()
	if _, err := e.ApplyCRDs(ctx, filepath.Join(crds, "kyverno.io_clusterpolicies.yaml")); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.yaml")
	if len(files) != 2 {
		t.Fatalf("policies %v, want the key and the keyless one", files)
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := dryRun(ctx, e, doc); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		// The check can fail: a misspelled field or a wrong enum is refused.
		for old, bad := range map[string]string{"failureAction: Enforce": "failureAction: Enforced", "failureAction:": "failureActions:"} {
			if err := dryRun(ctx, e, []byte(strings.Replace(string(doc), old, bad, 1))); err == nil {
				t.Errorf("%s with %q: accepted", f, bad)
			}
		}
	}
	if _, err := e.Dynamic.Resource(clusterPolicies).Get(ctx, "require-ai-bom-attestation", metav1.GetOptions{}); err == nil {
		t.Error("a dry run stored the policy")
	}
}
