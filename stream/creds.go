package stream

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// ErrCredentialsRefused is the cause of an Open, or of a request on an
// open bus, that failed because the connection's credentials are no good:
// a user JWT that expired or was revoked, or one the server does not trust
// (operator mode), or a wrong user, password, nkey or token. Errors that
// wrap it name the setting and the file (stream.credsFile <path>), never
// what the file holds.
var ErrCredentialsRefused = errors.New("NATS refuses these credentials")

// validateCredentials checks the credential settings without I/O.
func (c Config) validateCredentials() error {
	var errs []error
	if c.URL == "" && c.CredsFile != "" {
		errs = append(errs, errors.New("stream.credsFile: only for an external server (stream.url); an edge's link takes stream.hub.credsFile"))
	}
	if c.CredsFile != "" && c.NKeyFile != "" {
		errs = append(errs, errors.New("stream.credsFile and stream.nkeyFile: set one (a .creds file holds the user's nkey seed with its JWT)"))
	}
	return errors.Join(errs...)
}

// credential names what this connection authenticates with, for errors:
// the setting, and the file where there is one.
func (c Config) credential() string {
	switch {
	case c.CredsFile != "":
		return "stream.credsFile " + c.CredsFile
	case c.NKeyFile != "":
		return "stream.nkeyFile " + c.NKeyFile
	case c.User != "":
		return "stream.user " + c.User
	case c.Token != "":
		return "stream.token"
	}
	return "no credentials (stream.credsFile, stream.nkeyFile, stream.user or stream.token)"
}

// checkCredsFile reads a .creds file (a user JWT and the user's nkey seed,
// as `nsc generate creds` writes it) and refuses one that cannot work: no
// JWT, no seed, or a JWT that has expired. Errors name the file and never
// carry what it holds: the parsers' own errors, which may quote it, are
// not wrapped.
func checkCredsFile(path string, now time.Time) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("stream.credsFile: %w", err)
	}
	defer clear(data)
	tok, err := jwt.ParseDecoratedJWT(data)
	if err != nil || tok == "" {
		return fmt.Errorf("stream.credsFile %s: no user JWT in it (a NATS .creds file, as `nsc generate creds` writes it)", path)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return fmt.Errorf("stream.credsFile %s: its user JWT does not decode (a NATS .creds file, as `nsc generate creds` writes it, holds one)", path)
	}
	kp, err := jwt.ParseDecoratedUserNKey(data)
	if err != nil {
		return fmt.Errorf("stream.credsFile %s: no user nkey seed in it (a NATS .creds file, as `nsc generate creds` writes it, holds one)", path)
	}
	kp.Wipe()
	if uc.Expires > 0 && !now.Before(time.Unix(uc.Expires, 0)) {
		return fmt.Errorf("stream.credsFile %s: the user JWT expired at %s: %w; issue new ones (nsc generate creds) and put them there",
			path, time.Unix(uc.Expires, 0).UTC().Format(time.RFC3339), ErrCredentialsRefused)
	}
	return nil
}

// isAuthError reports whether the server refused the connection's
// credentials.
func isAuthError(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}

// refusedCredentials wraps err, a refusal of cfg's credentials, so that it
// says which credentials and what may be wrong with them.
func refusedCredentials(cfg Config, err error) error {
	return fmt.Errorf("%s: %w (a user JWT that expired, was revoked, or is not of an account the server trusts; or a wrong user, password, nkey or token): %w",
		cfg.credential(), ErrCredentialsRefused, err)
}

// authRefusals remembers the most telling credential refusal the server
// sent since the connection was last (re)established: an expiry or a
// revocation rather than the bare "authorization violation" that every
// later reconnect gets.
type authRefusals struct {
	mu  sync.Mutex
	err error
}

func (a *authRefusals) record(err error) {
	if !isAuthError(err) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil || errors.Is(a.err, nats.ErrAuthorization) {
		a.err = err
	}
}

func (a *authRefusals) reset() {
	a.mu.Lock()
	a.err = nil
	a.mu.Unlock()
}

func (a *authRefusals) last() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// credentialsRefused returns the error a request fails with when the
// connection is closed because the server refused its credentials (the
// client gives up after the same refusal twice), or nil. A connection
// still reconnecting is not given up on: new credentials written to the
// .creds file meanwhile are read at the next attempt.
func (b *Bus) credentialsRefused() error {
	if b.nc == nil || !b.nc.IsClosed() {
		return nil
	}
	err := b.auth.last()
	if err == nil && isAuthError(b.nc.LastError()) {
		err = b.nc.LastError()
	}
	if err == nil {
		return nil
	}
	return refusedCredentials(b.cfg, err)
}
