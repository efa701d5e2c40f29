package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  namespace: ml
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:%s
`

// Two documents naming one workload must not both be published: every pass
// would then append both states in turn. The later one wins, as with kubectl.
func TestLoadDuplicateWorkloadLaterWins(t *testing.T) {
	dir := t.TempDir()
	for name, tag := range map[string]string{"a.yaml": "v0.8.0", "b.yaml": "v0.9.0"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Replace(deployment, "%s", tag, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := collector.NewNormalizer(collector.Config{Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	loaded := Load(dir, dir, n)
	if loaded.Err != nil {
		t.Fatal(loaded.Err)
	}
	if len(loaded.Events) != 1 {
		t.Fatalf("events = %d, want 1", len(loaded.Events))
	}
	in := loaded.Events[0].Data.Inputs
	if in.Source != "file:b.yaml" {
		t.Errorf("winning source = %q, want file:b.yaml", in.Source)
	}
	if len(loaded.Notes) != 1 || !strings.HasSuffix(loaded.Notes[0].File, "a.yaml") || !strings.Contains(loaded.Notes[0].Reason, "b.yaml") {
		t.Errorf("notes = %v, want one for a.yaml naming b.yaml", loaded.Notes)
	}
}
