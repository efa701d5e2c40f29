package stream_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/streamtest"
)

// TestOpenExternalServer runs the scale-out code path against a real
// nats-server process over TCP: password auth, provisioning, an optimistic
// publish and a durable consume.
func TestOpenExternalServer(t *testing.T) {
	const pass = "s3cret-Pass"
	url := streamtest.StartExternal(t, "--user", "bom", "--pass", pass)
	ctx := stream.TestContext(t)

	b, err := stream.Open(ctx, stream.Config{URL: url, User: "bom", Password: pass}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Embedded() {
		t.Fatal("bus on an external URL reports embedded")
	}
	w := stream.TestWorkload("ext1")
	ev := stream.Observed(t, w, "vllm:a")
	seq, published, err := changelog.New(b).PublishChange(ctx, ev)
	if err != nil || !published {
		t.Fatalf("publish: published %v err %v", published, err)
	}
	cons, err := stream.JS(b).CreateOrUpdateConsumer(ctx, schemas.StreamChanges, jetstream.ConsumerConfig{
		Durable: "ext-test", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	md, err := msg.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.Sequence.Stream != seq || msg.Subject() != schemas.ChangesSubject(w) {
		t.Fatalf("consumed seq %d on %s, published seq %d", md.Sequence.Stream, msg.Subject(), seq)
	}
	if err := msg.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}

	// A wrong password fails, and neither it nor the right one is echoed.
	wrong := "Wr0ng-" + pass
	shortCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = stream.Open(shortCtx, stream.Config{URL: url, User: "bom", Password: wrong}, nil)
	if err == nil {
		t.Fatal("wrong password accepted")
	}
	if strings.Contains(err.Error(), pass) {
		t.Fatalf("error leaks the password: %v", err)
	}
	// Credentials in the URL are redacted from errors too.
	withCreds := strings.Replace(url, "nats://", "nats://bom:"+wrong+"@", 1)
	_, err = stream.Open(shortCtx, stream.Config{URL: withCreds}, nil)
	if err == nil || strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("error for a URL with credentials: %v", err)
	}
}

func TestOpenExternalWithNKey(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("authorization { users = [ { nkey: "+pub+" } ] }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	url := streamtest.StartExternal(t, "-c", conf)
	ctx := stream.TestContext(t)
	b, err := stream.Open(ctx, stream.Config{URL: url, NKeyFile: seedFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := changelog.New(b).PublishChange(ctx, stream.Observed(t, stream.TestWorkload("nk"), "vllm:a")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenNKeyFileErrorsNameFileNotSeed(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nk")
	const secret = "SUNOTAREALSEEDBUTSECRETMATERIAL0123456789"
	if err := os.WriteFile(bad, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{bad, filepath.Join(dir, "missing.nk")} {
		_, err := stream.Open(context.Background(), stream.Config{URL: "nats://127.0.0.1:1", NKeyFile: file}, nil)
		if err == nil {
			t.Fatalf("%s: Open succeeded", file)
		}
		if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "stream.nkeyFile") {
			t.Errorf("error does not name the setting and file: %v", err)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error leaks the seed: %v", err)
		}
	}
}

func TestConfigStringMasksSecrets(t *testing.T) {
	c := stream.Config{URL: "nats://u:urlpass@h:4222,nats://tok3n@h2:4222", User: "u", Password: "pw-123", Token: "tk-456", NKeyFile: "/k.nk"}
	s := c.String()
	for _, secret := range []string{"urlpass", "tok3n", "pw-123", "tk-456"} {
		if strings.Contains(s, secret) {
			t.Errorf("Config.String leaks %q: %s", secret, s)
		}
	}
	for _, want := range []string{"h:4222", "h2:4222", "user=u", "nkeyFile=/k.nk", "password=xxxxx", "token=xxxxx"} {
		if !strings.Contains(s, want) {
			t.Errorf("Config.String lacks %q: %s", want, s)
		}
	}
}
