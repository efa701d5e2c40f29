package stream

import (
	"context"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

func TestProvisionUpdatesLimitsOfExistingStreams(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	b, err := Open(ctx, Config{DataDir: dir, MaxAge: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	b, err = Open(ctx, Config{DataDir: dir, MaxAge: 30 * time.Second, MaxBytes: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range []string{schemas.StreamChanges, schemas.StreamBOMs, schemas.StreamDLQ} {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		c := s.CachedInfo().Config
		if name == schemas.StreamChanges {
			// CHANGES is trimmed by owner.EnforceRetention, which keeps last events.
			if c.MaxAge != 0 || c.MaxBytes != -1 {
				t.Errorf("stream %s: maxAge %s maxBytes %d: the server would age out last events", name, c.MaxAge, c.MaxBytes)
			}
			continue
		}
		if c.MaxAge != 30*time.Second || c.MaxBytes != 1<<30 {
			t.Errorf("stream %s: maxAge %s maxBytes %d after re-provisioning", name, c.MaxAge, c.MaxBytes)
		}
		// The dedupe window may not outlive the messages.
		if c.Duplicates > c.MaxAge {
			t.Errorf("stream %s: duplicates window %s exceeds maxAge %s", name, c.Duplicates, c.MaxAge)
		}
	}
	// Provision on the open bus is idempotent.
	if err := b.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
}
