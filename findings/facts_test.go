package findings

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/transformer"
)

// The facts the transformer gives with a BOM are the facts ReadFacts reads
// from its JSON, on every workload of the transformer's test manifests and
// of the real-world corpus in ../shared when it is there, rendered whole
// and shrunk to the smallest size a BOM may be limited to (evidence cut,
// models left out). The inline stage evaluates the first, a consumer the
// second.
func TestFindingFactsOfTheTransformerAreReadFacts(t *testing.T) {
	n, err := collector.NewNormalizer(collector.Config{Cluster: "dev", DefaultNamespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := transformer.NewRenderer(transformer.Config{Version: "test", Facts: true})
	if err != nil {
		t.Fatal(err)
	}
	small, err := transformer.NewRenderer(transformer.Config{Version: "test", MaxBOMBytes: 16 << 10, Facts: true})
	if err != nil {
		t.Fatal(err)
	}
	// One workload whose BOM exceeds the small limit: 80 models in flags.
	big := t.TempDir()
	var args strings.Builder
	for i := range 80 {
		fmt.Fprintf(&args, "        - --model\n        - org-%d/model-%d\n", i, i)
	}
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: many, namespace: ml}\nspec:\n  template:\n    spec:\n      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.9.2\n        command: [vllm, serve]\n        args:\n" + args.String()
	if err := os.WriteFile(filepath.Join(big, "many.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := []string{"../transformer/testdata/manifests", big, "../../shared/fixtures/realworld", "../../shared/fixtures/upstream"}
	boms, models, shrunk := 0, 0, 0
	for _, root := range roots {
		if _, err := os.Stat(root); err != nil && strings.Contains(root, "shared") {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s: %v (CI must have ../shared)", root, err)
			}
			continue // a plain clone: the project's own manifests only
		}
		err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return err
			}
			for _, ev := range files.Load(root, p, n).Events {
				var size int
				for _, r := range []*transformer.Renderer{whole, small} {
					res, err := r.Render(ev)
					if err != nil || res.BOM == nil {
						continue // what the transformer's own tests judge
					}
					if r == small && len(res.BOM) < size {
						shrunk++
					}
					size = len(res.BOM)
					boms++
					read, err := ReadFacts(res.BOM)
					if err != nil {
						t.Fatalf("%s: %v", p, err)
					}
					models += len(read.Models)
					if res.Facts == nil || !reflect.DeepEqual(*res.Facts, read) {
						t.Errorf("%s %s: the transformer gives\n%+v\nthe BOM says\n%+v", p, ev.Data.Workload, res.Facts, read)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	plain, err := transformer.NewRenderer(transformer.Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := plain.Render(files.Load(big, filepath.Join(big, "many.yaml"), n).Events[0]); err != nil || res.BOM == nil || res.Facts != nil {
		t.Errorf("a renderer not asked for facts gives %+v (%v)", res.Facts, err)
	}
	if boms < 100 || models < 100 || shrunk == 0 {
		t.Fatalf("compared %d BOMs with %d models, %d shrunk: too few to say anything", boms, models, shrunk)
	}
	t.Logf("compared %d BOMs, %d models, %d shrunk", boms, models, shrunk)
}
