package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One process owns a data directory; a second owner is refused with the
// first one's pid; a reader works through the owner; a missing directory is
// never created by a reader.
func TestDataDirectoryHasOneOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := testContext(t)
	missing := filepath.Join(t.TempDir(), "typo")
	if _, err := Attach(ctx, Config{DataDir: missing}, nil); !errors.Is(err, ErrNoDataDir) {
		t.Fatalf("attach to a missing directory: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a reader created %s", missing)
	}

	owner, err := Open(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, owner, []string{"x"}, 3)
	_, err = Open(ctx, Config{DataDir: dir}, nil)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second owner: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, ownerFile))
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
	if n, err := reader.LastSeq(ctx, "BOMS"); err != nil || n != 3 {
		t.Fatalf("read through the owner: %d, %v", n, err)
	}
	reader.Close()
	if n, err := owner.LastSeq(ctx, "BOMS"); err != nil || n != 3 {
		t.Fatalf("the owner after the reader left: %d, %v", n, err)
	}
	owner.Close()
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); !os.IsNotExist(err) {
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
	if n, err := reader.LastSeq(ctx, "BOMS"); err != nil || n != 3 {
		t.Fatalf("read without an owner: %d, %v", n, err)
	}
}

func TestControlRequestsReachTheOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := testContext(t)
	owner, err := Open(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = owner.Serve(sctx, "echo", func(ctx context.Context, req []byte, progress func([]byte)) ([]byte, error) {
			progress([]byte("half"))
			if string(req) == "fail" {
				return nil, errors.New("no such sink (password=hunter2)")
			}
			return append([]byte("done:"), req...), nil
		})
	}()
	reader, err := Attach(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var seen []string
	var res []byte
	waitUntil(t, "the owner serves", func() bool {
		res, err = reader.Call(ctx, "echo", []byte("x"), func(p []byte) { seen = append(seen, string(p)) })
		return err == nil
	})
	if string(res) != "done:x" || len(seen) == 0 || seen[len(seen)-1] != "half" {
		t.Fatalf("result %q, progress %v", res, seen)
	}
	_, err = reader.Call(ctx, "echo", []byte("fail"), nil)
	if err == nil || !strings.Contains(err.Error(), "no such sink") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error answer: %v", err)
	}
	if _, err := reader.Call(ctx, "nobody", nil, nil); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("a request nobody serves: %v", err)
	}
}
