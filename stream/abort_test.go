package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
)

// Abort stops the embedded server without draining: the connection is closed
// at once, later calls fail, and what was stored survives in the data
// directory for the next Open.
func TestAbortKeepsStoredMessages(t *testing.T) {
	dir := t.TempDir()
	ctx := stream.TestContext(t)
	b := stream.OpenEmbedded(t, stream.Config{DataDir: dir})
	w := stream.TestWorkload("abort")
	seq, pub, err := changelog.New(b).PublishChange(ctx, stream.Observed(t, w, "vllm/vllm-openai:v0.8.5"))
	if err != nil || !pub {
		t.Fatalf("publish: %v (published %v)", err, pub)
	}
	b.Abort()
	if !stream.Conn(b).IsClosed() {
		t.Error("connection still open after Abort")
	}
	if _, _, err := changelog.New(b).PublishChange(ctx, stream.Observed(t, w, "vllm/vllm-openai:v0.9.0")); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("publish after Abort: err = %v, want ErrConnectionClosed", err)
	}
	b.Close() // still safe after Abort

	again := stream.OpenEmbedded(t, stream.Config{DataDir: dir})
	_, last, ok, err := changelog.New(again).LastChange(context.Background(), w)
	if err != nil || !ok || last != seq {
		t.Fatalf("after Abort and reopen: last change seq %d ok %v err %v, want %d", last, ok, err, seq)
	}
}
