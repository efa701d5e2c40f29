package owner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/owner"
)

// A command on the same data directory reaches the owner's handlers through
// the owner's advertised server: progress, a result, a redacted error, a
// panic that stays an error, and silence when nobody serves the name.
func TestControlRequestsReachTheOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	own, err := stream.Open(ctx, stream.Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	served := make(chan struct{})
	go func() {
		_ = own.Control().Serve(ctx, "echo", func(ctx context.Context, req []byte, progress func([]byte)) ([]byte, error) {
			progress([]byte("half"))
			switch string(req) {
			case "fail":
				return nil, errors.New("no such sink (password=hunter2)")
			case "panic":
				panic("a sink blew up")
			}
			return append([]byte("done:"), req...), nil
		})
		close(served)
	}()
	reader, err := stream.Attach(ctx, stream.Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if !reader.ViaOwner() {
		t.Fatal("the reader opened the store a second time")
	}
	call := reader.Control()
	var seen []string
	var res []byte
	for deadline := time.Now().Add(time.Minute); ; { // until the subscription is in place
		res, err = call.Call(ctx, "echo", []byte("x"), func(p []byte) { seen = append(seen, string(p)) })
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || string(res) != "done:x" || len(seen) == 0 || seen[len(seen)-1] != "half" {
		t.Fatalf("result %q, %v, progress %v", res, err, seen)
	}
	_, err = call.Call(ctx, "echo", []byte("fail"), nil)
	if err == nil || !strings.Contains(err.Error(), "no such sink") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error answer: %v", err)
	}
	_, err = call.Call(ctx, "echo", []byte("panic"), nil)
	if err == nil || !strings.Contains(err.Error(), "panicked: a sink blew up") {
		t.Fatalf("panic answer: %v", err)
	}
	if res, err := call.Call(ctx, "echo", []byte("y"), nil); err != nil || string(res) != "done:y" {
		t.Fatalf("after a panic the owner answers %q, %v", res, err)
	}
	if _, err := call.Call(ctx, "nobody", nil, nil); !errors.Is(err, owner.ErrNoOwner) {
		t.Fatalf("a request nobody serves: %v", err)
	}
	cancel()
	<-served // Serve returns when its context ends
}
