package stream

import (
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
)

// One process owns an embedded data directory at a time: it holds an
// exclusive lock on <dataDir>/bomstream.lock (released by the kernel when the
// process dies, however it dies), and writes <dataDir>/owner.json (mode 0600)
// with a loopback address of its server and a credential, so that other
// commands on the same directory (history, get, replay, dlq) work through it
// instead of opening the store a second time, which would corrupt it.
const (
	lockFile  = "bomstream.lock"
	ownerFile = "owner.json"
)

// ErrInUse is returned by Open when another process owns the data directory.
var ErrInUse = errors.New("data directory in use")

// ErrNoDataDir is returned when a command that only reads or works through
// an owner is pointed at a data directory that does not exist: it is never
// created by such a command.
var ErrNoDataDir = errors.New("no bomstream data directory")

// Owner is what owner.json says of the process that owns a data directory.
type Owner struct {
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	URL      string    `json:"url,omitempty"`
	User     string    `json:"user,omitempty"`
	Password string    `json:"password,omitempty"`
	Token    string    `json:"token,omitempty"`
}

// dirLock is the flock on a data directory.
type dirLock struct{ f *os.File }

// lockDataDir takes the data directory's lock without waiting; when another
// process holds it, the error wraps ErrInUse and names that process.
func lockDataDir(dir string) (*dirLock, error) {
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
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// inUse describes the owner of dir for the error a second owner gets.
func inUse(dir string) error {
	o, err := ReadOwner(dir)
	if err != nil || o.PID == 0 {
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
		ErrInUse, dir, o.PID, o.Started.UTC().Format(time.RFC3339))
}

// ReadOwner reads dir's owner.json.
func ReadOwner(dir string) (Owner, error) {
	var o Owner
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("%s: %w", filepath.Join(dir, ownerFile), err)
	}
	return o, nil
}

// writeOwner writes dir's owner.json, readable by the owner's user only.
func writeOwner(dir string, o Owner) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ownerFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ownerFile)); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, ownerFile), err)
	}
	return nil
}

// dataDirExists reports whether the embedded data directory exists.
func dataDirExists(dir string) (bool, error) {
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
