package stream

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/bomstream/bomstream/stream/owner"
)

// ListenAuth protects the embedded server's TCP listener (Config.Listen).
// It is required unless Listen is a loopback address: whoever reaches an
// open JetStream can read CHANGES, forge BOMs that sinks export, or delete
// the streams. Set one of Token, User and Password, or NKeys (any two of
// the kinds together are allowed except Token); TLS is optional.
type ListenAuth struct {
	// Token (or TokenFile, a file holding it) is a shared secret clients
	// present (nats://TOKEN@host, or --nats-token).
	Token     string `json:"-" yaml:"token"`
	TokenFile string `json:"tokenFile" yaml:"tokenFile"`
	// User and Password (or PasswordFile) is one account clients log in with.
	User         string `json:"user" yaml:"user"`
	Password     string `json:"-" yaml:"password"`
	PasswordFile string `json:"passwordFile" yaml:"passwordFile"`
	// NKeys are the public user nkeys ("U...") allowed to connect.
	NKeys []string `json:"nkeys" yaml:"nkeys"`
	// TLSCert and TLSKey serve TLS on the listener; TLSCA, when set,
	// requires and verifies client certificates.
	TLSCert string `json:"tlsCert" yaml:"tlsCert"`
	TLSKey  string `json:"tlsKey" yaml:"tlsKey"`
	TLSCA   string `json:"tlsCA" yaml:"tlsCA"`
}

func (a ListenAuth) set() bool {
	return a.Token != "" || a.TokenFile != "" || a.User != "" || len(a.NKeys) > 0
}

// validate checks the listener's protection; listen is Config.Listen.
func (a ListenAuth) validate(listen string) error {
	var errs []error
	host, _, _ := net.SplitHostPort(listen)
	if !a.set() && !isLoopback(host) {
		errs = append(errs, fmt.Errorf("stream.listen: %s is not a loopback address and stream.listenAuth sets no token, user or nkeys: "+
			"an unauthenticated JetStream would let anyone who reaches it read every change, forge BOMs the sinks export, or delete the streams; "+
			"listen on 127.0.0.1, or set stream.listenAuth (BOMSTREAM_NATS_LISTEN_TOKEN, _USER and _PASSWORD)", listen))
	}
	if (a.Token != "" || a.TokenFile != "") && (a.User != "" || len(a.NKeys) > 0) {
		errs = append(errs, errors.New("stream.listenAuth.token: a token cannot be combined with users or nkeys"))
	}
	if a.Token != "" && a.TokenFile != "" {
		errs = append(errs, errors.New("stream.listenAuth.token and tokenFile: set one"))
	}
	if a.User != "" && a.Password == "" && a.PasswordFile == "" {
		errs = append(errs, errors.New("stream.listenAuth.password: required with user"))
	}
	if a.User == "" && (a.Password != "" || a.PasswordFile != "") {
		errs = append(errs, errors.New("stream.listenAuth.user: required with a password"))
	}
	for i, k := range a.NKeys {
		if !nkeys.IsValidPublicUserKey(k) {
			errs = append(errs, fmt.Errorf("stream.listenAuth.nkeys[%d]: not a public user nkey (U...)", i))
		}
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		errs = append(errs, errors.New("stream.listenAuth.tlsCert and tlsKey: set both or neither"))
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listenOptions sets up the embedded server's listener on o: the one
// Config.Listen asks for, or else one on a random loopback port for other
// bomstream commands on the same data directory (see package owner). It returns the
// options of the in-process connection, which authenticates like any
// client, and the credential other local commands use (written to
// owner.json): the token when the listener takes a token, else an internal
// user of its own.
func listenOptions(cfg Config, o *server.Options) ([]nats.Option, owner.Record, error) {
	internal := owner.Record{User: "bomstream-internal", Password: randomToken()}
	if cfg.Listen == "" {
		o.Host, o.Port = "127.0.0.1", server.RANDOM_PORT
		o.Users = []*server.User{{Username: internal.User, Password: internal.Password}}
		return []nats.Option{nats.UserInfo(internal.User, internal.Password)}, internal, nil
	}
	host, port, _ := net.SplitHostPort(cfg.Listen)
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, owner.Record{}, fmt.Errorf("stream.listen %q: %w", cfg.Listen, err)
	}
	if p == 0 {
		p = server.RANDOM_PORT
	}
	o.Host, o.Port = host, p
	a := cfg.ListenAuth
	if a.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: a.TLSCert, KeyFile: a.TLSKey, CaFile: a.TLSCA, Verify: a.TLSCA != ""})
		if err != nil {
			return nil, owner.Record{}, fmt.Errorf("stream.listenAuth.tlsCert: %w", err)
		}
		o.TLSConfig, o.TLS, o.TLSVerify = tc, true, a.TLSCA != ""
	}
	token, err := readSecret("stream.listenAuth.token", a.Token, a.TokenFile)
	if err != nil {
		return nil, owner.Record{}, err
	}
	if token != "" {
		o.Authorization = token
		return []nats.Option{nats.Token(token)}, owner.Record{Token: token}, nil
	}
	if !a.set() {
		return nil, owner.Record{}, nil // a loopback listener without auth, as asked
	}
	o.Users = []*server.User{{Username: internal.User, Password: internal.Password}}
	if a.User != "" {
		pass, err := readSecret("stream.listenAuth.password", a.Password, a.PasswordFile)
		if err != nil {
			return nil, owner.Record{}, err
		}
		o.Users = append(o.Users, &server.User{Username: a.User, Password: pass})
	}
	for _, k := range a.NKeys {
		o.Nkeys = append(o.Nkeys, &server.NkeyUser{Nkey: k})
	}
	return []nats.Option{nats.UserInfo(internal.User, internal.Password)}, internal, nil
}

func readSecret(field, value, file string) (string, error) {
	if file == "" {
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%sFile: %w", field, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
