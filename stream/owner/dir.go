package owner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

const (
	lockFile = "bomstream.lock"
	// File is the name of the advertisement in a data directory.
	File = "owner.json"
)

// ErrInUse is returned by Claim when another process owns the data directory.
var ErrInUse = errors.New("data directory in use")

// ErrNoDataDir is returned when a command that only reads or works through
// an owner is pointed at a data directory that does not exist: it is never
// created by such a command.
var ErrNoDataDir = errors.New("no bomstream data directory")

// Record is what owner.json says of the process that owns a data directory.
type Record struct {
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	URL      string    `json:"url,omitempty"`
	User     string    `json:"user,omitempty"`
	Password string    `json:"password,omitempty"`
	Token    string    `json:"token,omitempty"`
}

// Options are the connection options that authenticate to the owner's server.
func (r Record) Options() []nats.Option {
	switch {
	case r.Token != "":
		return []nats.Option{nats.Token(r.Token)}
	case r.User != "":
		return []nats.Option{nats.UserInfo(r.User, r.Password)}
	}
	return nil
}

// Dir is a data directory this process owns: its lock is held.
type Dir struct {
	path       string
	f          *os.File
	advertised bool
}

// Claim takes the data directory's lock without waiting; when another
// process holds it, the error wraps ErrInUse and names that process.
func Claim(dir string) (*Dir, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUse(dir)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &Dir{path: dir, f: f}, nil
}

// Advertise writes owner.json, readable by the owner's user only.
func (d *Dir) Advertise(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(d.path, File+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(d.path, File)); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(d.path, File), err)
	}
	d.advertised = true
	return nil
}

// Release gives the data directory up: owner.json goes, then the lock. It
// is safe on a nil or released Dir.
func (d *Dir) Release() {
	if d == nil {
		return
	}
	if d.advertised {
		_ = os.Remove(filepath.Join(d.path, File))
		d.advertised = false
	}
	d.Drop()
}

// Drop lets the lock go and leaves owner.json behind: what a process that
// dies leaves. It is safe on a nil or released Dir.
func (d *Dir) Drop() {
	if d == nil || d.f == nil {
		return
	}
	_ = syscall.Flock(int(d.f.Fd()), syscall.LOCK_UN)
	_ = d.f.Close()
	d.f = nil
}

// inUse describes the owner of dir for the error a second owner gets.
func inUse(dir string) error {
	r, err := Read(dir)
	if err != nil || r.PID == 0 {
		pid := ""
		if b, err := os.ReadFile(filepath.Join(dir, lockFile)); err == nil {
			pid = strings.TrimSpace(string(b))
		}
		if pid == "" {
			pid = "unknown"
		}
		return fmt.Errorf("%w: %s is held by bomstream pid %s; stop that process first (history, get, replay and dlq work through it while it runs)", ErrInUse, dir, pid)
	}
	return fmt.Errorf("%w: %s is held by bomstream pid %d, running since %s; stop that process first (history, get, replay and dlq work through it while it runs)",
		ErrInUse, dir, r.PID, r.Started.UTC().Format(time.RFC3339))
}

// Read reads dir's owner.json.
func Read(dir string) (Record, error) {
	var r Record
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, File), err)
	}
	return r, nil
}

// Wait reads the advertisement of the process that owns dir, waiting up to
// ten seconds for one (a process starting up writes it within moments);
// inUseErr, the answer Claim gave, is the error when none appears.
func Wait(ctx context.Context, dir string, inUseErr error) (Record, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, err := Read(dir); err == nil && r.URL != "" {
			return r, nil
		}
		if time.Now().After(deadline) {
			return Record{}, fmt.Errorf("%w; and it advertises no address to work through", inUseErr)
		}
		select {
		case <-ctx.Done():
			return Record{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Exists reports whether the data directory exists; a file in its place is
// an error.
func Exists(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("%s is not a directory", dir)
	}
	return true, nil
}
