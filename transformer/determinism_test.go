package transformer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas/validate"
)

// TestTreeDeterminism renders every manifest three times: twice as written
// (Go randomizes map iteration, so two passes walk the objects in different
// orders) and once rewritten as JSON with every object's keys in reverse
// order. All three must give the same bytes, and every event must validate
// against its JSON Schema.
func TestTreeDeterminism(t *testing.T) {
	roots := map[string]string{"own": filepath.Join("testdata", "manifests")}
	if _, ok := manifesttest.Find(); ok || os.Getenv("CI") == "true" {
		roots["upstream"] = manifesttest.Corpus(t)
	}
	v, err := validate.New("")
	if err != nil {
		t.Fatal(err)
	}
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			first := byWorkload(t, renderTree(t, root))
			second := byWorkload(t, renderTree(t, root))
			third := byWorkload(t, renderTree(t, reversedCopy(t, root)))
			if len(first) == 0 {
				t.Fatal("nothing rendered")
			}
			for k, a := range first {
				for pass, other := range map[string]map[string]rendered{"second pass": second, "reversed keys": third} {
					b, ok := other[k]
					if !ok {
						t.Errorf("%s: missing in the %s", k, pass)
						continue
					}
					if !bytes.Equal(a.res.BOM, b.res.BOM) {
						t.Errorf("%s: the %s gave other bytes", k, pass)
					}
				}
				raw, err := json.Marshal(event(t, a.inputs))
				if err != nil {
					t.Fatal(err)
				}
				if err := v.ValidateEvent(raw); err != nil {
					t.Errorf("%s: event does not validate: %v", k, err)
				}
			}
		})
	}
}

func byWorkload(t *testing.T, rs []rendered) map[string]rendered {
	t.Helper()
	out := map[string]rendered{}
	for _, r := range rs {
		w := r.inputs.Workload
		out[r.rel+" "+w.Key()] = r
	}
	return out
}

// reversedCopy writes every YAML file under root into a new tree, at the same
// relative path, as JSON documents whose object keys come in reverse order.
func reversedCopy(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		objs, err := manifest.ReadPath(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		var b bytes.Buffer
		for _, o := range objs {
			b.WriteString("---\n")
			writeReversed(&b, o.Obj)
			b.WriteString("\n")
		}
		rel, _ := filepath.Rel(root, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b.Bytes(), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeReversed(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(keys)))
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeReversed(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeReversed(b, e)
		}
		b.WriteByte(']')
	default:
		eb, _ := json.Marshal(x)
		b.Write(eb)
	}
}
