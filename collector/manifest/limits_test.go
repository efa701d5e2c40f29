package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func doc(name string) string { return "kind: A\nmetadata:\n  name: " + name + "\n" }

func writeTemp(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file over MaxFileBytes is skipped unread; one at the limit is read.
func TestReadFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	content := doc("a")
	writeTemp(t, filepath.Join(dir, "a.yaml"), content)
	writeTemp(t, filepath.Join(dir, "b.yaml"), content+"# one byte more\n")
	objs, skips, err := Read(dir, Limits{MaxFileBytes: int64(len(content))})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("names = %v", got)
	}
	if len(skips) != 1 || filepath.Base(skips[0].File) != "b.yaml" || !skips[0].Unread ||
		!strings.Contains(skips[0].Reason, fmt.Sprintf("is %d bytes, over the limit of %d bytes", len(content)+16, len(content))) {
		t.Errorf("skips = %+v", skips)
	}
}

// A file that grows between its stat and its read is still read through a
// limit: readAtMost stops one byte past it.
func TestReadAtMostStopsAtTheLimit(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		if runtime.GOOS == "linux" || os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer f.Close()
	b, err := readAtMost(f, 0, 1000)
	if !errors.Is(err, errTooLarge) || len(b) > 1001 {
		t.Errorf("readAtMost(/dev/zero, 1000) = %d bytes, %v", len(b), err)
	}
	b, err = readAtMost(strings.NewReader("abc"), 3, 3)
	if err != nil || string(b) != "abc" {
		t.Errorf("readAtMost(abc, 3) = %q, %v", b, err)
	}
}

// Past MaxDocuments documents the rest of a file is not read, with a note
// naming the line where reading stopped.
func TestReadDocumentLimit(t *testing.T) {
	dir := t.TempDir()
	writeTemp(t, filepath.Join(dir, "m.yaml"), doc("a")+"---\n"+doc("b")+"---\n"+doc("c")+"---\n"+doc("d"))
	objs, skips, err := Read(dir, Limits{MaxDocuments: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("names = %v", got)
	}
	if len(skips) != 1 || skips[0].Line != 8 || !skips[0].Unread || !strings.Contains(skips[0].Reason, "more than 2 documents") {
		t.Errorf("skips = %+v", skips)
	}
	objs, skips, _ = Read(dir, Limits{})
	if len(objs) != 4 || len(skips) != 0 {
		t.Errorf("default limits: %d objects, skips %v", len(objs), skips)
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("zero limits: %v", err)
	}
	err := Limits{MaxFileBytes: -1, MaxDocuments: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "MaxFileBytes") || !strings.Contains(err.Error(), "MaxDocuments") {
		t.Errorf("negative limits: %v", err)
	}
}

// Aliases of one long string cannot multiply it into gigabytes: a document
// expanding to more than 16 times its size (and 1 MiB) in strings is refused.
func TestAliasesOfLongStrings(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	var b strings.Builder
	b.WriteString("kind: A\nmetadata: {name: a}\ns: &s " + long + "\nl:\n")
	for range 100 {
		b.WriteString("- *s\n")
	}
	objs, err := Parse("bomb.yaml", []byte(b.String()))
	if len(objs) != 0 || err == nil || !strings.Contains(err.Error(), "bomb.yaml:") || !strings.Contains(err.Error(), "too many bytes") {
		t.Errorf("objects %d, err %v", len(objs), err)
	}
	// A few aliases are fine.
	objs, err = Parse("ok.yaml", []byte("kind: A\nmetadata: {name: a}\ns: &s "+long+"\nl: [*s, *s, *s]\n"))
	if len(objs) != 1 || err != nil {
		t.Errorf("objects %d, err %v", len(objs), err)
	}
}
