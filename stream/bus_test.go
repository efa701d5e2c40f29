package stream

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

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
	if _, err := b.KeyValue(ctx, "bomstream-ledger-file"); err != nil {
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
		{Config{CredsFile: "u.creds"}, "stream.credsFile: only for an external server"},
		{Config{URL: "nats://x:4222", CredsFile: "u.creds", NKeyFile: "u.nk"}, "stream.credsFile and stream.nkeyFile"},
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

func TestCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if done, err := b.Durables().CaughtUp(ctx, schemas.StreamChanges, "c"); err != nil || done {
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
	if done, err := b.Durables().CaughtUp(ctx, schemas.StreamChanges, "c"); err != nil || done {
		t.Fatalf("caught up with one message undelivered: %v %v", done, err)
	}
	batch, err = cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if done, _ := b.Durables().CaughtUp(ctx, schemas.StreamChanges, "c"); done {
			t.Fatal("caught up with a message unacked")
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := b.Durables().CaughtUp(ctx, schemas.StreamChanges, "c"); err != nil || !done {
		t.Fatalf("not caught up after every ack: %v %v", done, err)
	}
}

// Defect: --nats-listen on a non-loopback address served an unauthenticated
// JetStream. Now it needs credentials, and clients without them are refused.
func TestNonLoopbackListenNeedsAuth(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "10.1.2.3:4222"} {
		err := Config{Listen: listen}.Validate()
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") || !strings.Contains(err.Error(), "stream.listenAuth") {
			t.Errorf("listen %s without auth: %v", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "localhost:4222", "[::1]:4222"} {
		if err := (Config{Listen: listen}).Validate(); err != nil {
			t.Errorf("loopback %s: %v", listen, err)
		}
	}
	b := openEmbedded(t, Config{Listen: "0.0.0.0:0", ListenAuth: ListenAuth{Token: "s3cr3t-listen-token"}})
	ctx := testContext(t)
	if _, err := b.Reader().LastSeq(ctx, schemas.StreamChanges); err != nil {
		t.Fatalf("in-process connection with auth: %v", err)
	}
	port := b.srv.Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	if _, err := Open(ctx, Config{URL: url}, nil); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("client without the token: %v", err)
	}
	other, err := Open(ctx, Config{URL: url, Token: "s3cr3t-listen-token"}, nil)
	if err != nil {
		t.Fatalf("client with the token: %v", err)
	}
	other.Close()
}

func TestListenWithUsersAndNKeys(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	b := openEmbedded(t, Config{Listen: "0.0.0.0:0", ListenAuth: ListenAuth{User: "ops", Password: "pw", NKeys: []string{pub}}})
	ctx := testContext(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", b.srv.Addr().(*net.TCPAddr).Port)
	for name, cfg := range map[string]Config{
		"user": {URL: url, User: "ops", Password: "pw"},
		"nkey": {URL: url, NKeyFile: seedFile},
	} {
		o, err := Open(ctx, cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o.Close()
	}
	if _, err := Open(ctx, Config{URL: url, User: "ops", Password: "wrong"}, nil); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if err := (Config{Listen: "0.0.0.0:1", ListenAuth: ListenAuth{User: "ops"}}).Validate(); err == nil || !strings.Contains(err.Error(), "listenAuth.password") {
		t.Fatalf("user without password: %v", err)
	}
	if err := (Config{Listen: "0.0.0.0:1", ListenAuth: ListenAuth{NKeys: []string{"nope"}}}).Validate(); err == nil || !strings.Contains(err.Error(), "nkeys[0]") {
		t.Fatalf("bad nkey: %v", err)
	}
}

// A listen address that cannot be bound fails Open at once with the OS error.
func TestListenAddressInUseFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	_, err = Open(testContext(t), Config{DataDir: t.TempDir(), Listen: ln.Addr().String()}, nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v, want the OS error", err)
	}
	if d := time.Since(start); d > 20*time.Second { // the server alone waits 30s and says "not ready"
		t.Fatalf("took %s", d)
	}
}
