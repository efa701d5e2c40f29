package collector

import (
	"errors"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// Defects found by the unit tests of the new collector parts, each kept as
// the test that showed it.

// A nil child is ignored, not a panic.
func TestGenericNilChild(t *testing.T) {
	n := newNormalizer(t, Config{})
	owner := schemas.Workload{Cluster: "default", Namespace: "ml", APIVersion: "flow.example.com/v1", Kind: "Flow", Name: "f", UID: "u-1"}
	in := n.Generic(owner, []*schemas.Inputs{podInputs(t, n, "a", "e:1"), nil, podInputs(t, n, "b", "e:2")})
	if len(in.Components) != 2 {
		t.Errorf("components = %+v", in.Components)
	}
}

// {{.Namespace}} is the namespace the object was read in when it names none.
func TestPlaceholderNamespaceDefault(t *testing.T) {
	objs := parseObjs(t, strings.ReplaceAll(runtimeDocs, "metadata: {name: isvc, namespace: ml}", "metadata: {name: isvc}"))
	for _, o := range objs[1:] {
		o["metadata"].(map[string]any)["namespace"] = "default"
	}
	n := newNormalizer(t, Config{})
	in := normalizeWith(t, n, objs[0], testLookup(objs))
	args := in.Components[0].Containers[1].Args
	if len(args) < 3 || args[2] != "default-isvc" {
		t.Errorf("args = %q, want the served name default-isvc", args)
	}
}

// A bad value of an env map is an error naming its key.
func TestEnvMapErrorNamesTheKey(t *testing.T) {
	n := newNormalizer(t, Config{})
	obj := parseObj(t, `{apiVersion: kubeai.org/v1, kind: Model, metadata: {name: q, namespace: ml}, spec: {engine: VLLM, env: {A: x, B: {c: d}}}}`)
	_, err := n.Normalize(obj, "cluster")
	if err == nil || !strings.Contains(err.Error(), "spec.env.B") {
		t.Errorf("err = %v, want one naming spec.env.B", err)
	}
}

// A storage URI is kept in the --flag=value form too, its credentials
// stripped.
func TestStorageURIInFlagEquals(t *testing.T) {
	n := newNormalizer(t, Config{})
	_, args := n.args.command([]string{"tool"}, []string{"--src=s3://user:secret@bucket/model", "--key=hunter2"})
	if args[0] != "--src=s3://REDACTED@bucket/model" || args[1] != "--key=REDACTED" {
		t.Errorf("args = %q", args)
	}
}

// A bound object is part of the workload that takes it, and a workload of
// its own when none there does: no model is absent from the inventory
// because its server is installed elsewhere.
func TestBoundObjectOnItsOwn(t *testing.T) {
	n := newNormalizer(t, Config{})
	server := map[string]any{"apiVersion": "mlops.seldon.io/v1alpha1", "kind": "Server",
		"metadata": map[string]any{"name": "srv", "namespace": "ml"}, "spec": map[string]any{"serverConfig": "mlserver"}}
	named := seldonModel("ml", "named", map[string]any{"server": "srv"})
	byReq := seldonModel("ml", "by-req", map[string]any{"requirements": []any{"sklearn"}})
	orphan := seldonModel("ml", "orphan", map[string]any{"server": "mlserver"})
	lookup := testLookup{server, named, byReq, orphan}
	for _, m := range []map[string]any{named, byReq} {
		_, err := n.NormalizeWith(m, "cluster", lookup)
		if !errors.Is(err, ErrNotWorkload) || !strings.Contains(err.Error(), "loaded into Server/srv") {
			t.Errorf("%s: err = %v, want it loaded into Server/srv", objName(m), err)
		}
	}
	in, err := n.NormalizeWith(orphan, "cluster", lookup)
	if err != nil {
		t.Fatalf("orphan: %v", err)
	}
	if f, ok := in.Field("storageUri"); !ok || f.Value != "gs://models/orphan" {
		t.Errorf("orphan fields: %+v", in.Fields)
	}
	// With no lookup (a cluster source deciding later) it is a workload too.
	if _, err := n.Normalize(named, "cluster"); err != nil {
		t.Errorf("no lookup: %v", err)
	}
	// The kinds: a Server is read by Models (linked); a Model reads Servers.
	if k, _ := n.KindOf("mlops.seldon.io", "Server"); !k.Linked || !k.Linking {
		t.Errorf("Server kind: %+v", k)
	}
	if k, _ := n.KindOf("mlops.seldon.io", "Model"); !k.Linked || !k.Linking || !k.Workload {
		t.Errorf("Model kind: %+v", k)
	}
}
