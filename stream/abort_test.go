package stream

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
)

// Abort stops the embedded server without draining: the connection is closed
// at once, later calls fail, and what was stored survives in the data
// directory for the next Open.
func TestAbortKeepsStoredMessages(t *testing.T) {
	dir := t.TempDir()
	ctx := testContext(t)
	b := openEmbedded(t, Config{DataDir: dir})
	w := testWorkload("abort")
	seq, pub, err := b.PublishChange(ctx, observed(t, w, "vllm/vllm-openai:v0.8.5"))
	if err != nil || !pub {
		t.Fatalf("publish: %v (published %v)", err, pub)
	}
	b.Abort()
	if !b.nc.IsClosed() {
		t.Error("connection still open after Abort")
	}
	if _, _, err := b.PublishChange(ctx, observed(t, w, "vllm/vllm-openai:v0.9.0")); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("publish after Abort: err = %v, want ErrConnectionClosed", err)
	}
	b.Close() // still safe after Abort

	again := openEmbedded(t, Config{DataDir: dir})
	_, last, ok, err := again.LastChange(context.Background(), w)
	if err != nil || !ok || last != seq {
		t.Fatalf("after Abort and reopen: last change seq %d ok %v err %v, want %d", last, ok, err, seq)
	}
}
