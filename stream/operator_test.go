package stream_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/changelog"
)

// operatorHub is a nats-server in operator mode with a memory resolver, as
// `nsc generate config --mem-resolver` configures one (docs/fleet.md): an
// operator, its system account, and the account BOMSTREAM (JetStream on),
// whose users the test issues. It runs in this process and listens on
// loopback; bomstream reaches it over TCP, as it reaches a separate one.
type operatorHub struct {
	t        *testing.T
	dir      string
	conf     string
	srv      *server.Server
	operator nkeys.KeyPair
	account  nkeys.KeyPair
	claims   *jwt.AccountClaims
	opJWT    string
	sysPub   string
	sys      string // the system account's preload line
	secrets  []string
}

func startOperatorHub(t *testing.T) *operatorHub {
	t.Helper()
	h := &operatorHub{t: t, dir: t.TempDir()}
	h.operator = newKey(t, nkeys.CreateOperator)
	opPub, _ := h.operator.PublicKey()
	sysKP := newKey(t, nkeys.CreateAccount)
	sysPub, _ := sysKP.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name, oc.SystemAccount = "bomstream", sysPub
	h.opJWT, h.sysPub = h.encode(oc, h.operator), sysPub
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	h.sys = fmt.Sprintf("%s: %q", sysPub, h.encode(sc, h.operator))

	h.account = newKey(t, nkeys.CreateAccount)
	accPub, _ := h.account.PublicKey()
	h.claims = jwt.NewAccountClaims(accPub)
	h.claims.Name = "BOMSTREAM"
	h.claims.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}

	h.conf = filepath.Join(h.dir, "server.conf")
	h.writeConf()
	opts, err := server.ProcessConfigFile(h.conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	if h.srv, err = server.NewServer(opts); err != nil {
		t.Fatal(err)
	}
	go h.srv.Start()
	if !h.srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("operator-mode nats-server not ready")
	}
	t.Cleanup(h.srv.Shutdown)
	return h
}

func newKey(t *testing.T, create func() (nkeys.KeyPair, error)) nkeys.KeyPair {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// encode signs claims with kp and remembers the JWT as a secret no log
// line or error may carry.
func (h *operatorHub) encode(c jwt.Claims, kp nkeys.KeyPair) string {
	h.t.Helper()
	s, err := c.Encode(kp)
	if err != nil {
		h.t.Fatal(err)
	}
	h.secrets = append(h.secrets, s)
	return s
}

// writeConf writes the server configuration with the account's current
// claims in the memory resolver's preload, as `nsc generate config
// --mem-resolver` does.
func (h *operatorHub) writeConf() {
	h.t.Helper()
	accPub, _ := h.account.PublicKey()
	conf := fmt.Sprintf(`listen: 127.0.0.1:-1
server_name: hub-operator
jetstream { store_dir: %q }
operator: %q
system_account: %s
resolver: MEMORY
resolver_preload: {
  %s
  %s: %q
}
`, filepath.Join(h.dir, "js"), h.opJWT, h.sysPub, h.sys, accPub, h.encode(h.claims, h.operator))
	if err := os.WriteFile(h.conf, []byte(conf), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// user issues the user name of BOMSTREAM with perms (nil: unrestricted),
// expiring at expires (zero: never), and writes its .creds file. It
// returns the file and the user's public key.
func (h *operatorHub) user(name string, perms *server.Permissions, expires time.Time) (string, string) {
	h.t.Helper()
	kp := newKey(h.t, nkeys.CreateUser)
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	if perms != nil {
		uc.Pub.Allow.Add(perms.Publish.Allow...)
		uc.Sub.Allow.Add(perms.Subscribe.Allow...)
	}
	if !expires.IsZero() {
		uc.Expires = expires.Unix()
	}
	tok := h.encode(uc, h.account)
	seed, err := kp.Seed()
	if err != nil {
		h.t.Fatal(err)
	}
	h.secrets = append(h.secrets, string(seed))
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		h.t.Fatal(err)
	}
	file := filepath.Join(h.dir, name+".creds")
	if err := os.WriteFile(file, creds, 0o600); err != nil {
		h.t.Fatal(err)
	}
	return file, pub
}

// revoke revokes user pub in the account's claims and reloads the server
// with them, as `nsc revocations add-user`, `nsc generate config` and
// `nats-server --signal reload` do.
func (h *operatorHub) revoke(pub string) {
	h.t.Helper()
	h.claims.Revoke(pub)
	h.writeConf()
	if err := h.srv.Reload(); err != nil {
		h.t.Fatalf("reload with the revocation: %v", err)
	}
}

// assertNoSecret fails when err or any logged line carries a JWT or a
// seed the hub issued, or a part of one.
func (h *operatorHub) assertNoSecret(err error, logs *observer.ObservedLogs) {
	h.t.Helper()
	var texts []string
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, e := range logs.All() {
		texts = append(texts, fmt.Sprintf("%s %v", e.Message, e.ContextMap()))
	}
	for _, text := range texts {
		for _, s := range h.secrets {
			for part := range strings.SplitSeq(s, ".") { // a JWT's header, claims and signature
				if len(part) >= 16 && strings.Contains(text, part) {
					h.t.Errorf("a credential (or a part of one) reached an error or a log line: %s", text)
				}
			}
		}
	}
}

// openWith opens a bus on the hub with creds, its log observed.
func (h *operatorHub) openWith(ctx context.Context, creds string) (*stream.Bus, *observer.ObservedLogs, error) {
	core, logs := observer.New(zap.DebugLevel)
	b, err := stream.Open(ctx, stream.Config{URL: h.srv.ClientURL(), CredsFile: creds, RetryFor: 20 * time.Second}, zap.New(core))
	return b, logs, err
}

// TestOperatorModeCollectorCreds: on a hub in operator mode (memory
// resolver), a collector connecting with its cluster's .creds file
// publishes its own cluster's changes only; an expired user and a revoked
// one are refused, at Open and on an open connection, with an error naming
// the .creds file; no JWT or seed reaches an error or a log line.
func TestOperatorModeCollectorCreds(t *testing.T) {
	h := startOperatorHub(t)
	ctx := stream.TestContext(t)
	adminCreds, _ := h.user("bomstream", nil, time.Time{})
	admin, adminLogs, err := h.openWith(ctx, adminCreds)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	c1Creds, c1Pub := h.user("collector-c1", stream.EdgePermissions("c1"), time.Time{})
	c1, c1Logs, err := h.openWith(ctx, c1Creds)
	if err != nil {
		t.Fatal(err)
	}
	own := stream.TestWorkload("mine")
	own.Cluster = "c1"
	if _, pub, err := changelog.New(c1).PublishChange(ctx, stream.Observed(t, own, "vllm:a")); err != nil || !pub {
		t.Fatalf("own cluster: published %v, %v", pub, err)
	}
	other := stream.TestWorkload("theirs")
	other.Cluster = "c2"
	_, _, err = changelog.New(c1).PublishChange(ctx, stream.Observed(t, other, "vllm:a"))
	if !errors.Is(err, stream.ErrPublishDenied) {
		t.Fatalf("collector c1 publishing as c2: %v", err)
	}
	h.assertNoSecret(err, c1Logs)
	if m, err := admin.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(own)); err != nil || m == nil {
		t.Fatalf("CHANGES lacks c1's own change: %v, %v", m, err)
	}
	if m, err := admin.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(other)); err != nil || m != nil {
		t.Fatalf("CHANGES holds c2's workload written by c1: %v, %v", m, err)
	}

	t.Run("expired at Open", func(t *testing.T) {
		creds, _ := h.user("collector-old", stream.EdgePermissions("c1"), time.Now().Add(-time.Hour))
		_, logs, err := h.openWith(ctx, creds)
		assertRefused(t, err, creds, "expired at")
		h.assertNoSecret(err, logs)
	})
	t.Run("revoked at Open", func(t *testing.T) {
		creds, pub := h.user("collector-gone", stream.EdgePermissions("c1"), time.Time{})
		h.revoke(pub)
		_, logs, err := h.openWith(ctx, creds)
		assertRefused(t, err, creds, "authorization violation")
		h.assertNoSecret(err, logs)
	})
	t.Run("revoked while connected", func(t *testing.T) {
		h.revoke(c1Pub)
		w := stream.TestWorkload("after-revocation")
		w.Cluster = "c1"
		_, _, err := changelog.New(c1).PublishChange(ctx, stream.Observed(t, w, "vllm:a"))
		assertRefused(t, err, c1Creds, "authentication revoked")
		h.assertNoSecret(err, c1Logs)
		if m, err := admin.Reader().LastMsg(ctx, schemas.StreamChanges, schemas.ChangesSubject(w)); err != nil || m != nil {
			t.Fatalf("CHANGES holds a revoked user's change: %v, %v", m, err)
		}
		c1.Close()
	})
	t.Run("expiring while connected", func(t *testing.T) {
		// Long enough for Open on a busy machine; JWT times are seconds.
		expires := time.Now().Add(6 * time.Second).Truncate(time.Second)
		creds, _ := h.user("collector-brief", stream.EdgePermissions("c1"), expires)
		b, logs, err := h.openWith(ctx, creds)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		// The server closes the connection at the expiry: wait for that, not
		// for the clock.
		stream.WaitUntil(t, "the server to close the expired user's connection", func() bool { return !stream.Conn(b).IsConnected() })
		if time.Now().Before(expires) {
			t.Fatalf("the connection closed at %s, before the expiry %s", time.Now().Format(time.RFC3339Nano), expires.Format(time.RFC3339))
		}
		w := stream.TestWorkload("after-expiry")
		w.Cluster = "c1"
		_, _, err = changelog.New(b).PublishChange(ctx, stream.Observed(t, w, "vllm:a"))
		assertRefused(t, err, creds, "authentication expired")
		h.assertNoSecret(err, logs)
	})
	h.assertNoSecret(nil, adminLogs)
}

// assertRefused checks that err is a credential refusal naming the .creds
// file, with why in it.
func assertRefused(t *testing.T, err error, creds, why string) {
	t.Helper()
	if !errors.Is(err, stream.ErrCredentialsRefused) || !strings.Contains(err.Error(), "stream.credsFile "+creds) ||
		!strings.Contains(strings.ToLower(err.Error()), why) {
		t.Fatalf("want a refusal naming %s (%s), got: %v", creds, why, err)
	}
	t.Logf("refused: %v", err)
}

// A .creds file that cannot work is refused before connecting, by an error
// that names the file and quotes nothing of it.
func TestCredsFileErrorsNameFileNotContent(t *testing.T) {
	dir := t.TempDir()
	kp := newKey(t, nkeys.CreateUser)
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	acc := newKey(t, nkeys.CreateAccount)
	tok, err := jwt.NewUserClaims(pub).Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	const garbage = "NOT-A-JWT-BUT-SECRET-MATERIAL-0123456789"
	for name, c := range map[string]struct{ content, want string }{
		"garbage.creds": {garbage, "its user JWT does not decode"},
		"noseed.creds":  {"-----BEGIN NATS USER JWT-----\n" + tok + "\n------END NATS USER JWT------\n", "no user nkey seed in it"},
		"seedonly.creds": {"-----BEGIN USER NKEY SEED-----\n" + string(seed) + "\n------END USER NKEY SEED------\n",
			"its user JWT does not decode"},
		"missing.creds": {"", "no such file"},
	} {
		file := filepath.Join(dir, name)
		if name != "missing.creds" {
			if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := stream.Open(context.Background(), stream.Config{URL: "nats://127.0.0.1:1", CredsFile: file}, nil)
		if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "stream.credsFile") ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error naming stream.credsFile %s (%s), got %v", name, file, c.want, err)
			continue
		}
		for _, secret := range []string{garbage, string(seed), tok[len(tok)-20:]} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error quotes the file: %v", name, err)
			}
		}
	}
}
