package stream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/stream/owner"
)

// One process owns a data directory; a second owner is refused with the
// first one's pid; a reader works through the owner; a missing directory is
// never created by a reader.
func TestDataDirectoryHasOneOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := testContext(t)
	missing := filepath.Join(t.TempDir(), "typo")
	if _, err := Attach(ctx, Config{DataDir: missing}, nil); !errors.Is(err, owner.ErrNoDataDir) {
		t.Fatalf("attach to a missing directory: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a reader created %s", missing)
	}

	own, err := Open(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, own, []string{"x"}, 3)
	_, err = Open(ctx, Config{DataDir: dir}, nil)
	if !errors.Is(err, owner.ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second owner: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, owner.File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("owner.json: %v, mode %v", err, fi.Mode())
	}
	reader, err := Attach(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reader.ViaOwner() {
		t.Fatal("the reader opened the store a second time")
	}
	if n, err := reader.Reader().LastSeq(ctx, "BOMS"); err != nil || n != 3 {
		t.Fatalf("read through the owner: %d, %v", n, err)
	}
	reader.Close()
	if n, err := own.Reader().LastSeq(ctx, "BOMS"); err != nil || n != 3 {
		t.Fatalf("the owner after the reader left: %d, %v", n, err)
	}
	own.Close()
	if _, err := os.Stat(filepath.Join(dir, owner.File)); !os.IsNotExist(err) {
		t.Fatalf("owner.json left after Close: %v", err)
	}
	// Nobody owns it now: a reader opens it itself.
	reader, err = Attach(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if reader.ViaOwner() {
		t.Fatal("no owner, yet ViaOwner")
	}
	if n, err := reader.Reader().LastSeq(ctx, "BOMS"); err != nil || n != 3 {
		t.Fatalf("read without an owner: %d, %v", n, err)
	}
}
