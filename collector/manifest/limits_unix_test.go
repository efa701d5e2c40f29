//go:build unix

package manifest

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// Only regular files are opened: a named pipe, a device and a socket named
// like manifests, and a symlink to a directory, are skipped with a note that
// says what they are; a symlink to a regular file is read.
func TestReadSkipsWhatIsNotARegularFile(t *testing.T) {
	// A socket path must stay under 108 bytes: not t.TempDir().
	dir, err := os.MkdirTemp("", "mf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	writeTemp(t, filepath.Join(dir, "a.yaml"), doc("a"))
	if err := os.Symlink(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "dir.yaml")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	objs, skips, err := Read(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs); !reflect.DeepEqual(got, []string{"a", "a"}) {
		t.Errorf("names = %v, want a twice (the file and the symlink to it)", got)
	}
	want := map[string]string{
		"dir.yaml":  "not a regular file (symlink to ",
		"fifo.yaml": "not a regular file (a named pipe)",
		"sock.yaml": "not a regular file (a socket)",
		"zero.yaml": "not a regular file (symlink to /dev/zero, a character device)",
	}
	if len(skips) != len(want) {
		t.Fatalf("skips = %v, want %d", skips, len(want))
	}
	for _, s := range skips {
		w, ok := want[filepath.Base(s.File)]
		if !ok || !strings.Contains(s.Reason, w) || s.Line != 0 || s.Unread ||
			filepath.Base(s.File) == "dir.yaml" && !strings.Contains(s.Reason, ", a directory)") {
			t.Errorf("skip %+v, want a reason with %q", s, w)
		}
	}
	// Named directly, too.
	for _, name := range []string{"fifo.yaml", "zero.yaml"} {
		objs, skips, err := Read(filepath.Join(dir, name), Limits{})
		if err != nil || len(objs) != 0 || len(skips) != 1 {
			t.Errorf("Read(%s) = %v, %v, %v", name, objs, skips, err)
		}
	}
	// ReadPath, all or nothing, reports them as errors.
	if _, err := ReadPath(filepath.Join(dir, "fifo.yaml")); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("ReadPath(fifo) err = %v", err)
	}
}
