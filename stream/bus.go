package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"

	"github.com/bomstream/bomstream/stream/owner"
)

// Config chooses the embedded server or an external one and sizes the streams.
// The zero value is the embedded default with data in ./bomstream-data.
type Config struct {
	// URL of an external NATS server or cluster; empty means embedded.
	URL string `json:"url" yaml:"url"`
	// DataDir is the embedded server's JetStream store.
	DataDir string `json:"dataDir" yaml:"dataDir"`
	// Listen makes the embedded server also accept TCP clients, e.g.
	// "127.0.0.1:4222"; empty means in-process only.
	Listen string `json:"listen" yaml:"listen"`
	// ListenAuth protects that listener; required unless Listen is loopback.
	ListenAuth ListenAuth `json:"listenAuth" yaml:"listenAuth"`

	// External-server credentials and TLS (all optional).
	CredsFile string `json:"credsFile" yaml:"credsFile"`
	NKeyFile  string `json:"nkeyFile" yaml:"nkeyFile"`
	User      string `json:"user" yaml:"user"`
	Password  string `json:"-" yaml:"password"`
	Token     string `json:"-" yaml:"token"`
	TLSCA     string `json:"tlsCA" yaml:"tlsCA"`
	TLSCert   string `json:"tlsCert" yaml:"tlsCert"`
	TLSKey    string `json:"tlsKey" yaml:"tlsKey"`

	// Replicas of every stream and ledger (1 embedded, 3 in a cluster).
	Replicas int `json:"replicas" yaml:"replicas"`
	// MaxAge limits how long history is kept; zero keeps it all. BOMS and
	// DLQ age out on the server; CHANGES is trimmed by owner.EnforceRetention,
	// which never removes a workload's last event. MaxBytes limits BOMS and
	// DLQ only (a size limit cannot spare the last events).
	MaxAge   time.Duration `json:"maxAge" yaml:"maxAge"`
	MaxBytes int64         `json:"maxBytes" yaml:"maxBytes"`
	// RetryFor bounds how long a publish, read or ledger write keeps
	// retrying through a stream leader election or a reconnect
	// (DefaultRetryFor when zero; at most 3/4 of the duplicate window).
	RetryFor time.Duration `json:"retryFor" yaml:"retryFor"`

	// Fleet: an edge's embedded server and the hub's sources (edge.go).
	Domain string     `json:"domain" yaml:"domain"`
	Hub    LeafRemote `json:"hub" yaml:"hub"`
	Edges  []Edge     `json:"edges" yaml:"edges"`
}

// DefaultDataDir is where the embedded server keeps its store by default.
const DefaultDataDir = "bomstream-data"

// Validate checks the configuration before anything starts.
func (c Config) Validate() error {
	var errs []error
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("stream.replicas: %d is outside 1..5", c.Replicas))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("stream.maxAge: negative"))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("stream.maxBytes: negative"))
	}
	if c.RetryFor < 0 {
		errs = append(errs, fmt.Errorf("stream.retryFor: negative"))
	}
	errs = append(errs, c.validateFleet(), c.validateCredentials())
	if c.URL == "" && c.Replicas > 1 {
		errs = append(errs, fmt.Errorf("stream.replicas: %d needs an external cluster (stream.url)", c.Replicas))
	}
	if c.URL != "" && c.Listen != "" {
		errs = append(errs, fmt.Errorf("stream.listen: only the embedded server listens; unset it or stream.url"))
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("stream.listen: %w", err))
		} else if err := c.ListenAuth.validate(c.Listen); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, fmt.Errorf("stream.tlsCert and stream.tlsKey: set both or neither"))
	}
	return errors.Join(errs...)
}

func (c Config) replicas() int {
	if c.Replicas == 0 {
		return 1
	}
	return c.Replicas
}

// Bus is an open connection to JetStream with the streams provisioned. The
// stages use its methods only; the connection itself stays inside.
type Bus struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config
	srv *server.Server // nil when external
	log *zap.Logger

	mu      sync.Mutex
	streams map[string]jetstream.Stream // handles from the last Provision

	denied deniedSubjects // publish permission violations the server reported
	auth   authRefusals   // credential refusals the server sent

	dir      *owner.Dir // held while the bus owns an embedded data directory
	viaOwner bool       // connected through another process's owner.json
}

// Open starts or connects, then provisions the streams. With the embedded
// server it creates the data directory when missing and owns it: a second
// process on the same directory gets an error wrapping owner.ErrInUse that names
// the owner.
func Open(ctx context.Context, cfg Config, log *zap.Logger) (*Bus, error) {
	return open(ctx, cfg, log, false)
}

// Attach is for commands that read (history, get, dlq) or ask the owner to
// act (replay, dlq retry). With an external server it is Open. With the
// embedded store it never creates the data directory (an error wrapping
// owner.ErrNoDataDir); when another process owns the directory it connects to that
// process's server through the loopback address and credential of its
// owner.json (ViaOwner is then true) and provisions nothing; otherwise it
// opens the store itself, owning it for as long as the bus is open.
func Attach(ctx context.Context, cfg Config, log *zap.Logger) (*Bus, error) {
	return open(ctx, cfg, log, true)
}

func open(ctx context.Context, cfg Config, log *zap.Logger, attach bool) (*Bus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	b := &Bus{cfg: cfg, log: log}
	opts := []nats.Option{nats.Name("bomstream"), nats.MaxReconnects(-1), nats.ErrorHandler(b.asyncError),
		nats.ReconnectHandler(func(*nats.Conn) { b.auth.reset() })}
	url := cfg.URL
	if url == "" {
		dir := cfg.dataDir()
		if attach {
			ok, err := owner.Exists(dir)
			if err != nil {
				return nil, fmt.Errorf("data directory: %w", err)
			}
			if !ok {
				return nil, fmt.Errorf("%w at %s (give --data-dir, or run `bomstream run` there first)", owner.ErrNoDataDir, dir)
			}
		} else if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		d, err := owner.Claim(dir)
		if errors.Is(err, owner.ErrInUse) && attach {
			return attachOwner(ctx, b, dir, err)
		}
		if err != nil {
			return nil, err
		}
		b.dir = d
		srv, conn, creds, err := startEmbedded(cfg)
		if err != nil {
			d.Release()
			return nil, err
		}
		b.srv = srv
		opts = append(opts, nats.InProcessServer(srv))
		opts = append(opts, conn...)
		creds.PID, creds.Started, creds.URL = os.Getpid(), time.Now().UTC(), loopbackURL(srv)
		if err := d.Advertise(creds); err != nil {
			b.shutdown()
			return nil, err
		}
	} else {
		ext, err := externalOptions(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, ext...)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		b.shutdown()
		if isAuthError(err) {
			err = refusedCredentials(cfg, err)
		}
		return nil, fmt.Errorf("connect to nats %s: %w", describe(cfg), err)
	}
	b.nc = nc
	if b.js, err = jetstream.New(nc, jetstream.WithPublishAsyncTimeout(attemptTimeout)); err != nil {
		b.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if err := b.Provision(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// attachOwner connects to the process that owns dir, through its
// owner.json; inUseErr is the lock's answer, returned when no owner.json
// appears.
func attachOwner(ctx context.Context, b *Bus, dir string, inUseErr error) (*Bus, error) {
	o, err := owner.Wait(ctx, dir, inUseErr)
	if err != nil {
		return nil, err
	}
	opts := append([]nats.Option{nats.Name("bomstream")}, o.Options()...)
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the owner of %s (pid %d): %w", dir, o.PID, err)
	}
	b.nc, b.viaOwner = nc, true
	if b.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b.log.Debug("working through the owner of the data directory", zap.String("dir", dir), zap.Int("pid", o.PID))
	return b, nil
}

// loopbackURL is a client URL of srv that a local process can dial.
func loopbackURL(srv *server.Server) string {
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// ViaOwner reports whether the bus reaches an embedded store through the
// process that owns it (see Attach).
func (b *Bus) ViaOwner() bool { return b.viaOwner }

// describe names the server for error messages, without any credential a
// URL may carry ("nats://user:pass@host" becomes "nats://user:xxxxx@host").
func describe(cfg Config) string {
	if cfg.URL == "" {
		return "(embedded, " + cfg.dataDir() + ")"
	}
	return redactURLs(cfg.URL)
}

// redactURLs masks the userinfo of each URL of a comma-separated server list.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil {
			if strings.Contains(p, "@") {
				p = "(unparsable url)"
			}
			parts[i] = p
			continue
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			} else {
				u.User = url.User("xxxxx") // a bare userinfo is a token
			}
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

func (c Config) dataDir() string {
	if c.DataDir == "" {
		return DefaultDataDir
	}
	return c.DataDir
}

func startEmbedded(cfg Config) (*server.Server, []nats.Option, owner.Record, error) {
	o := &server.Options{
		ServerName: "bomstream",
		JetStream:  true,
		StoreDir:   cfg.dataDir(),
		NoSigs:     true,
		NoLog:      true,
	}
	conn, creds, err := listenOptions(cfg, o)
	if err != nil {
		return nil, nil, owner.Record{}, err
	}
	if err := cfg.applyEdge(o); err != nil {
		return nil, nil, owner.Record{}, err
	}
	if cfg.Listen != "" {
		if o.Port != server.RANDOM_PORT {
			// The server only logs a failed bind and never becomes ready:
			// try the address first, for the OS's own error at once.
			ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, fmt.Sprint(o.Port)))
			if err != nil {
				return nil, nil, owner.Record{}, fmt.Errorf("stream.listen %s: %w", cfg.Listen, err)
			}
			_ = ln.Close()
		}
	}
	srv, err := server.NewServer(o)
	if err != nil {
		return nil, nil, owner.Record{}, fmt.Errorf("embedded nats-server in %s: %w", o.StoreDir, err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, nil, owner.Record{}, fmt.Errorf("embedded nats-server in %s: not ready after 30s", o.StoreDir)
	}
	return srv, conn, creds, nil
}

// externalOptions turns the credential and TLS settings into connection
// options. Errors name the setting and the file, never a secret: the nkey
// library's parse errors are constants and carry no key material.
func externalOptions(cfg Config) ([]nats.Option, error) {
	var o []nats.Option
	if cfg.CredsFile != "" {
		if err := checkCredsFile(cfg.CredsFile, time.Now()); err != nil {
			return nil, err
		}
		o = append(o, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.NKeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("stream.nkeyFile %s: %w", cfg.NKeyFile, err)
		}
		o = append(o, opt)
	}
	if cfg.User != "" {
		o = append(o, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.Token != "" {
		o = append(o, nats.Token(cfg.Token))
	}
	if cfg.TLSCA != "" {
		o = append(o, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" {
		o = append(o, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	return o, nil
}

// DuplicateWindow is how long CHANGES and BOMS remember a Nats-Msg-Id (the
// whole MaxAge when that is shorter).
const DuplicateWindow = 2 * time.Minute

// Provision creates or updates CHANGES, BOMS, DLQ and FINDINGS. It is idempotent, and a
// changed replica count, MaxAge or MaxBytes updates the existing streams (as
// does a subject added to one: FINDINGS's finding sets).
func (b *Bus) Provision(ctx context.Context) error {
	dup := DuplicateWindow
	if b.cfg.MaxAge > 0 && b.cfg.MaxAge < dup {
		dup = b.cfg.MaxAge // the server refuses a window longer than MaxAge
	}
	for _, sc := range []jetstream.StreamConfig{
		{Name: schemas.StreamChanges, Subjects: []string{schemas.SubjectChangesPrefix + ">"}, Duplicates: dup},
		{Name: schemas.StreamBOMs, Subjects: []string{schemas.SubjectBOMsPrefix + ">"}, Duplicates: dup},
		{Name: schemas.StreamDLQ, Subjects: []string{schemas.SubjectDLQPrefix + ">"}, Duplicates: dup},
		{Name: schemas.StreamFindings, Subjects: []string{schemas.SubjectFindingsPrefix + ">", schemas.SubjectFindingSetPrefix + ">"}, Duplicates: dup},
	} {
		sc.Storage = jetstream.FileStorage
		// Direct gets serve "last message of a subject" (every PublishChange,
		// the latest-only check, history) without the JSON API round trip.
		sc.AllowDirect = true
		sc.Replicas = b.cfg.replicas()
		sc.MaxAge = b.cfg.MaxAge
		sc.MaxBytes = b.cfg.MaxBytes
		if sc.Name == schemas.StreamChanges {
			// The server would age out a workload's last event too, and with
			// it the state deletions are computed from: CHANGES is trimmed
			// by owner.EnforceRetention instead, which keeps every last event.
			sc.MaxAge, sc.MaxBytes = 0, 0
		}
		if sc.MaxBytes == 0 {
			sc.MaxBytes = -1
		}
		if sc.Name == schemas.StreamChanges {
			sc.Sources = b.cfg.changeSources()
		}
		var s jetstream.Stream
		err := b.retry(ctx, "", true, func(ctx context.Context) (err error) {
			s, err = b.js.CreateOrUpdateStream(ctx, sc)
			return err
		})
		if err != nil {
			return fmt.Errorf("provision stream %s: %w", sc.Name, err)
		}
		b.mu.Lock()
		if b.streams == nil {
			b.streams = make(map[string]jetstream.Stream)
		}
		b.streams[sc.Name] = s
		b.mu.Unlock()
	}
	if len(b.cfg.Edges) > 0 {
		// The hub's name index sources the edges' from the start.
		if _, err := b.KeyValue(ctx, NameIndexBucket); err != nil {
			return fmt.Errorf("name index: %w", err)
		}
	}
	return nil
}

// stream returns a handle on a stream, from Provision when it made one.
// Stream is the handle of the stream called name.
func (b *Bus) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	b.mu.Lock()
	s, ok := b.streams[name]
	b.mu.Unlock()
	if ok {
		return s, nil
	}
	err := b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		s, err = b.js.Stream(ctx, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return s, nil
}

// Embedded reports whether the bus runs its own server.
func (b *Bus) Embedded() bool { return b.srv != nil }

// ClientURL is the TCP URL of the embedded server when it listens, else "".
func (b *Bus) ClientURL() string {
	if b.srv == nil || b.cfg.Listen == "" {
		return ""
	}
	return b.srv.ClientURL()
}

// Close drains the connection and, when embedded, shuts the server down
// after its store is flushed.
func (b *Bus) Close() {
	if b.nc != nil {
		_ = b.nc.Drain()
		for b.nc.IsDraining() {
			time.Sleep(10 * time.Millisecond)
		}
		b.nc.Close()
	}
	b.shutdown()
}

// Abort shuts the embedded server down at once, without draining the
// connection or waiting for in-flight work: what a crash looks like to the
// store; for tests and emergencies. Publishes, acks and ledger writes in
// flight fail or are lost; what the server had stored stays in the data
// directory. With an external server only the connection is closed.
func (b *Bus) Abort() {
	if b.srv != nil {
		b.srv.Shutdown()
	}
	if b.nc != nil {
		b.nc.Close()
	}
	if b.srv != nil {
		b.srv.WaitForShutdown()
	}
	// A dead process's lock goes with it; its owner.json stays behind.
	b.dir.Drop()
	b.dir = nil
}

func (b *Bus) shutdown() {
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
	b.dir.Release() // owner.json goes, then the lock
	b.dir = nil
}

// asyncError is the connection's error handler: it keeps the subjects the
// server refused a publish on, for retry to fail such a publish at once.
func (b *Bus) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	b.denied.record(err)
	b.auth.record(err)
	b.log.Warn("nats", zap.Error(err))
}

// String describes the configuration for logs with every secret masked:
// Password and Token are never printed and a URL's userinfo is redacted.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server=%s replicas=%d maxAge=%s maxBytes=%d", describe(c), c.replicas(), c.MaxAge, c.MaxBytes)
	if c.Listen != "" {
		fmt.Fprintf(&b, " listen=%s", c.Listen)
	}
	for _, f := range []struct{ name, v string }{
		{"credsFile", c.CredsFile}, {"nkeyFile", c.NKeyFile}, {"user", c.User},
		{"tlsCA", c.TLSCA}, {"tlsCert", c.TLSCert}, {"tlsKey", c.TLSKey},
	} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s=%s", f.name, f.v)
		}
	}
	if c.Password != "" {
		b.WriteString(" password=xxxxx")
	}
	if c.Token != "" {
		b.WriteString(" token=xxxxx")
	}
	return b.String()
}
