package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func names(objs []Object) []string {
	var out []string
	for _, o := range objs {
		md, _ := o.Obj["metadata"].(map[string]any)
		n, _ := md["name"].(string)
		out = append(out, n)
	}
	return out
}

func TestParseMultiDocument(t *testing.T) {
	src := `# leading comment
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
# only a comment
---

---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  replicas: 3
  paused: false
  ratio: 0.5
  nothing: null
  big: 12345678901
---
--- {apiVersion: v1, kind: Service, metadata: {name: c}}
...
`
	objs, err := Parse("multi.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := names(objs), []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if got := []int{objs[0].Line, objs[1].Line, objs[2].Line}; !reflect.DeepEqual(got, []int{2, 11, 22}) {
		t.Errorf("lines = %v, want [2 11 22]", got)
	}
	if got := []int{objs[0].Index, objs[1].Index, objs[2].Index}; !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Errorf("indexes = %v, want [0 1 2]", got)
	}
	spec := objs[1].Obj["spec"].(map[string]any)
	if v, ok := spec["replicas"].(int64); !ok || v != 3 {
		t.Errorf("replicas = %#v, want int64 3", spec["replicas"])
	}
	if v, ok := spec["paused"].(bool); !ok || v {
		t.Errorf("paused = %#v, want false", spec["paused"])
	}
	if v, ok := spec["ratio"].(float64); !ok || v != 0.5 {
		t.Errorf("ratio = %#v, want 0.5", spec["ratio"])
	}
	if v, ok := spec["nothing"]; !ok || v != nil {
		t.Errorf("nothing = %#v, want nil present", v)
	}
	if v, ok := spec["big"].(int64); !ok || v != 12345678901 {
		t.Errorf("big = %#v", spec["big"])
	}
	for _, o := range objs {
		if o.File != "multi.yaml" {
			t.Errorf("File = %q", o.File)
		}
	}
}

func TestParseList(t *testing.T) {
	src := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: one
- apiVersion: apps/v1
  kind: DeploymentList
  items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: two
---
apiVersion: apps/v1
kind: DeploymentList
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: three}
`
	objs, err := Parse("list.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := names(objs), []string{"one", "two", "three"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if got := []int{objs[0].Line, objs[1].Line, objs[2].Line}; !reflect.DeepEqual(got, []int{4, 11, 19}) {
		t.Errorf("lines = %v, want [4 11 19]", got)
	}
	if objs[0].Index != 0 || objs[1].Index != 0 || objs[2].Index != 1 {
		t.Errorf("indexes = %d %d %d", objs[0].Index, objs[1].Index, objs[2].Index)
	}
}

func TestParseJSON(t *testing.T) {
	src := `{
	"apiVersion": "apps/v1",
	"kind": "Deployment",
	"metadata": {"name": "j"},
	"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
}`
	objs, err := Parse("d.json", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(objs) != 1 || names(objs)[0] != "j" || objs[0].Line != 1 {
		t.Fatalf("objs = %+v", objs)
	}
	c := objs[0].Obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if c["image"] != "nginx" {
		t.Errorf("image = %v", c["image"])
	}
}

func TestParseMalformedKeepsGoodDocuments(t *testing.T) {
	src := `apiVersion: v1
kind: ConfigMap
metadata:
  name: good1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: bad
  labels: [unclosed
data:
  x: y
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: good2
`
	objs, err := Parse("deploy.yaml", []byte(src))
	if got, want := names(objs), []string{"good1", "good2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if err == nil {
		t.Fatal("want an error for the malformed document")
	}
	// The flow sequence opened on line 10 is never closed; yaml reports the
	// problem inside the second document (lines 6..13), never in the others.
	msg := err.Error()
	if !strings.HasPrefix(msg, "deploy.yaml:") {
		t.Fatalf("error %q does not start with the file name", msg)
	}
	line := lineOf(t, msg)
	if line < 10 || line > 13 {
		t.Errorf("error %q names line %d, want within 10..13", msg, line)
	}
}

func TestParseMalformedExactLine(t *testing.T) {
	src := "a: 1\n---\nkind: X\nmetadata:\n  name: x\n bad: indent\n"
	_, err := Parse("f.yaml", []byte(src))
	if err == nil {
		t.Fatal("want error")
	}
	if got := lineOf(t, err.Error()); got != 6 {
		t.Errorf("error %q: line %d, want 6", err, got)
	}
	// a tab in indentation, in a later document
	src = "kind: A\n---\nkind: B\n---\nkind: C\nspec:\n\tx: 1\n"
	objs, err := Parse("g.yaml", []byte(src))
	if err == nil || len(objs) != 2 {
		t.Fatalf("objs=%d err=%v", len(objs), err)
	}
	if got := lineOf(t, err.Error()); got != 7 {
		t.Errorf("error %q: line %d, want 7", err, got)
	}
}

func lineOf(t *testing.T, msg string) int {
	t.Helper()
	parts := strings.SplitN(msg, ":", 3)
	if len(parts) < 3 {
		t.Fatalf("error %q has no file:line prefix", msg)
	}
	n := 0
	for _, r := range parts[1] {
		if r < '0' || r > '9' {
			t.Fatalf("error %q: line field %q is not a number", msg, parts[1])
		}
		n = n*10 + int(r-'0')
	}
	return n
}

func TestParseNonMapping(t *testing.T) {
	src := "apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\n# c\njust a string\n---\n- a\n- b\n---\nkind: List\nitems:\n- 42\n- {kind: B, metadata: {name: b}}\n"
	objs, err := Parse("x.yaml", []byte(src))
	if got, want := names(objs), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, want := range []string{"x.yaml:6: document is a scalar", "x.yaml:8: document is a sequence", "x.yaml:13: list item 0 is a scalar"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestParseKeys(t *testing.T) {
	objs, err := Parse("k.yaml", []byte("kind: A\nnodeSelector:\n  1: one\n  true: yes\n"))
	if err != nil {
		t.Fatal(err)
	}
	ns := objs[0].Obj["nodeSelector"].(map[string]any)
	if ns["1"] != "one" || ns["true"] != "yes" {
		t.Errorf("nodeSelector = %#v", ns)
	}
	_, err = Parse("k.yaml", []byte("kind: A\n? [a, b]\n: c\n"))
	if err == nil || !strings.Contains(err.Error(), "k.yaml:2: mapping key is a sequence") {
		t.Errorf("err = %v", err)
	}
	_, err = Parse("k.yaml", []byte("kind: A\nmetadata:\n  name: a\n  name: b\n"))
	if err == nil || !strings.Contains(err.Error(), `k.yaml:4: mapping key "name" already defined`) {
		t.Errorf("err = %v", err)
	}
}

func TestParseAnchorsAndMerge(t *testing.T) {
	src := "kind: A\nbase: &b {image: x, name: n}\nc1:\n  <<: *b\n  name: override\nc2: *b\n"
	objs, err := Parse("m.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c1 := objs[0].Obj["c1"].(map[string]any)
	if c1["image"] != "x" || c1["name"] != "override" {
		t.Errorf("c1 = %#v", c1)
	}
	if objs[0].Obj["c2"].(map[string]any)["name"] != "n" {
		t.Errorf("c2 = %#v", objs[0].Obj["c2"])
	}
}

func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: A\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		prev := "*a" + string(rune('0'+i-1))
		if i > 9 {
			prev = "*a" + string(rune('a'+i-10))
		}
		name := string(rune('0' + i))
		if i > 9 {
			name = string(rune('a' + i - 10))
		}
		b.WriteString("a" + name + ": &a" + name + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "bomb.yaml:") {
		t.Fatalf("err = %v, want an expansion error naming the file", err)
	}
}

func TestParseHugeDocument(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: ConfigMap\nmetadata: {name: huge}\ndata:\n")
	for i := range 50000 {
		b.WriteString("  key")
		b.WriteString(strings.Repeat("x", 5))
		b.WriteString(itoa(i))
		b.WriteString(": \"")
		b.WriteString(strings.Repeat("v", 40))
		b.WriteString("\"\n")
	}
	objs, err := Parse("huge.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(objs[0].Obj["data"].(map[string]any)); got != 50000 {
		t.Errorf("data keys = %d", got)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestParseDirectives(t *testing.T) {
	src := "%YAML 1.1\n---\nkind: A\nmetadata: {name: a}\n"
	objs, err := Parse("d.yaml", []byte(src))
	if err != nil || len(objs) != 1 || objs[0].Line != 3 {
		t.Fatalf("objs=%+v err=%v", objs, err)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "\n\n", "# nothing\n", "---\n---\n", "~\n", "null"} {
		objs, err := Parse("e.yaml", []byte(src))
		if err != nil || len(objs) != 0 {
			t.Errorf("Parse(%q) = %v, %v; want nothing", src, objs, err)
		}
	}
}

func TestReadPathWalkOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := func(n string) string { return "kind: A\nmetadata:\n  name: " + n + "\n" }
	write("b.yaml", doc("b"))
	write("a/z.yml", doc("az"))
	write("a/a.json", `{"kind":"A","metadata":{"name":"aa"}}`)
	write("c/d/e.yaml", doc("cde")+"---\n"+doc("cde2"))
	write("notes.txt", doc("ignored"))
	write("README.md", doc("ignored"))
	write("broken.yaml", "kind: [\n")

	objs, err := ReadPath(dir)
	if got, want := names(objs), []string{"aa", "az", "b", "cde", "cde2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "broken.yaml")+":") {
		t.Errorf("err = %v, want one naming broken.yaml", err)
	}
	if objs[3].File != filepath.Join(dir, "c/d/e.yaml") || objs[4].Line != 5 || objs[4].Index != 1 {
		t.Errorf("cde2 = %+v", objs[4])
	}

	one, err := ReadPath(filepath.Join(dir, "b.yaml"))
	if err != nil || len(one) != 1 || names(one)[0] != "b" {
		t.Errorf("single file: %v %v", one, err)
	}
	if _, err := ReadPath(filepath.Join(dir, "missing")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: err = %v", err)
	}
}
