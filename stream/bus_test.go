package stream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

func TestOpenEmbeddedProvisionsIdempotently(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	b, err := Open(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(ctx, schemas.SubjectChangesPrefix+"dev.u1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	// Re-opening the same store keeps the message and provisions again without error.
	b, err = Open(ctx, Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range []string{schemas.StreamChanges, schemas.StreamBOMs, schemas.StreamDLQ} {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if s.CachedInfo().Config.Storage != jetstream.FileStorage {
			t.Fatalf("stream %s not on file storage", name)
		}
	}
	s, _ := b.js.Stream(ctx, schemas.StreamChanges)
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("CHANGES holds %d messages after restart, want 1", n)
	}
	if _, err := b.Ledger(ctx, "file"); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Replicas: 3}, "stream.replicas"},
		{Config{URL: "nats://x:4222", Listen: "127.0.0.1:4222"}, "stream.listen"},
		{Config{Listen: "nohostport"}, "stream.listen"},
		{Config{TLSCert: "c.pem"}, "stream.tlsCert"},
		{Config{MaxAge: -1}, "stream.maxAge"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

func TestCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if done, err := b.CaughtUp(ctx, schemas.StreamChanges, "c"); err != nil || done {
		t.Fatalf("a missing consumer counts as caught up: %v %v", done, err)
	}
	for i := range 3 {
		if _, err := b.js.Publish(ctx, schemas.SubjectChangesPrefix+"dev.u"+string(rune('a'+i)), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := b.js.CreateOrUpdateConsumer(ctx, schemas.StreamChanges, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(2)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := b.CaughtUp(ctx, schemas.StreamChanges, "c"); err != nil || done {
		t.Fatalf("caught up with one message undelivered: %v %v", done, err)
	}
	batch, err = cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if done, _ := b.CaughtUp(ctx, schemas.StreamChanges, "c"); done {
			t.Fatal("caught up with a message unacked")
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := b.CaughtUp(ctx, schemas.StreamChanges, "c"); err != nil || !done {
		t.Fatalf("not caught up after every ack: %v %v", done, err)
	}
}
