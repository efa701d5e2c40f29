package file

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
)

// Type is the registry name of this sink.
const Type = "file"

// File names inside a workload directory.
const (
	LatestFile  = "latest.cdx.json"
	PointerFile = "latest.json"
	DeletedFile = "deleted.json"
	// Suffix ends every BOM file: <bomhash-hex>.cdx.json.
	Suffix = ".cdx.json"
)

// DefaultDir is where BOMs go when Config.Dir is empty.
const DefaultDir = "boms"

// Config configures one file sink.
type Config struct {
	// Name of this sink instance; default "file". Set by the registry from
	// the sink's entry, not from its config block.
	Name string `yaml:"-"`
	// Dir is the root of the tree; default "boms".
	Dir string `yaml:"dir"`
	// Fsync makes every write durable before Export returns: each file is
	// fsynced before it is linked or renamed into place, and then its
	// directory. Unset means true. False skips the fsyncs (four waits on
	// the disk per BOM): while the machine stays up, files still appear
	// atomically; a machine crash (not a process crash) may lose the last
	// exports or leave them empty or truncated, although the runner has
	// already recorded them as exported in its ledger. A truncated immutable
	// file is rewritten by the next Export of the same BOM; a lost one comes
	// back only with a replay into a sink under a new name. Use false where
	// the tree can be rebuilt that way.
	Fsync *bool `yaml:"fsync"`
}

// durable reports the effective Fsync setting.
func (c Config) durable() bool { return c.Fsync == nil || *c.Fsync }

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Name != "" {
		if err := sinks.ValidateName(c.Name); err != nil {
			return fmt.Errorf("name: %w", err)
		}
	}
	if strings.ContainsRune(c.Dir, 0) {
		return fmt.Errorf("dir: contains a NUL byte")
	}
	return nil
}

// Sink writes BOMs into a directory tree. It implements sinks.Sink.
type Sink struct {
	name  string
	dir   string
	log   *zap.Logger
	fsync bool
	locks [64]sync.Mutex // striped by workload directory
}

// New validates cfg and returns a sink. It touches no file: directories are
// created by the first write.
func New(cfg Config, log *zap.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = Type
	}
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Sink{name: cfg.Name, dir: filepath.Clean(cfg.Dir), fsync: cfg.durable(), log: log.With(zap.String("sink", cfg.Name))}, nil
}

// SinkType is the registry entry of the file sink.
var SinkType = sinks.Type{
	NewConfig: func() sinks.Config { return &Config{} },
	New: func(_ context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
		c := *cfg.(*Config)
		c.Name = deps.Name
		return New(c, deps.Log)
	},
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Dir is the root of the tree.
func (s *Sink) Dir() string { return s.dir }

// Close implements sinks.Sink; the file sink holds nothing open.
func (s *Sink) Close() error { return nil }

// WorkloadDir is the directory of w, or a permanent error when a segment of
// w's identity could escape the tree.
func (s *Sink) WorkloadDir(w schemas.Workload) (string, error) {
	ns := w.Namespace
	if ns == "" {
		ns = "_"
	}
	segs := []string{w.Cluster, ns, w.Kind, w.Name}
	for i, field := range []string{"cluster", "namespace", "kind", "name"} {
		if err := checkSegment(segs[i]); err != nil {
			return "", sinks.Permanent(fmt.Errorf("workload %s: %s: %w", field, w, err))
		}
	}
	return filepath.Join(append([]string{s.dir}, segs...)...), nil
}

func checkSegment(seg string) error {
	switch {
	case seg == "" || seg == "." || seg == "..":
		return fmt.Errorf("path segment %q is not allowed", seg)
	case strings.ContainsAny(seg, "/\\\x00"):
		return fmt.Errorf("path segment %q contains a separator or NUL", seg)
	}
	return nil
}

var bomHashPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// pointer is the content of latest.json.
type pointer struct {
	BomHash   string    `json:"bomHash"`
	ChangeSeq uint64    `json:"changeSeq"`
	StreamSeq uint64    `json:"streamSeq"`
	Time      time.Time `json:"time"`
	UID       string    `json:"uid"`
}

// marker is the content of deleted.json.
type marker struct {
	ChangeSeq uint64    `json:"changeSeq"`
	StreamSeq uint64    `json:"streamSeq"`
	Time      time.Time `json:"time"`
	UID       string    `json:"uid"`
}

// newer orders versions of one name by change sequence, then stream sequence.
func newer(changeSeq, streamSeq, thanChange, thanStream uint64) bool {
	if changeSeq != thanChange {
		return changeSeq > thanChange
	}
	return streamSeq > thanStream
}

// Export implements sinks.Sink.
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	dir, err := s.WorkloadDir(b.Workload)
	if err != nil {
		return err
	}
	if !bomHashPattern.MatchString(b.BomHash) {
		return sinks.Permanent(fmt.Errorf("export %s: bom hash %q is not sha256:<hex>", b.Workload, b.BomHash))
	}
	if sum := sha256.Sum256(b.Body); "sha256:"+hex.EncodeToString(sum[:]) != b.BomHash {
		return sinks.Permanent(fmt.Errorf("export %s: body does not match bom hash %s", b.Workload, b.BomHash))
	}
	if !json.Valid(b.Body) {
		return sinks.Permanent(fmt.Errorf("export %s: body is not JSON", b.Workload))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	mu := s.lock(dir)
	mu.Lock()
	defer mu.Unlock()

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	file := strings.TrimPrefix(b.BomHash, "sha256:") + Suffix
	if err := s.createOnly(ctx, dir, file, b.Body); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	// From here on the BOM is stored; what follows is bookkeeping that a
	// retried Export repeats, so it runs to the end regardless of ctx.
	var ptr pointer
	if err := s.readJSON(filepath.Join(dir, PointerFile), &ptr); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	if ptr.BomHash != b.BomHash && (ptr.BomHash == "" || newer(b.ChangeSeq, b.StreamSeq, ptr.ChangeSeq, ptr.StreamSeq)) {
		if err := s.replace(dir, LatestFile, b.Body); err != nil {
			return fmt.Errorf("export %s: %w", b.Workload, err)
		}
		p, _ := json.Marshal(pointer{BomHash: b.BomHash, ChangeSeq: b.ChangeSeq, StreamSeq: b.StreamSeq, Time: b.Time.UTC(), UID: b.Workload.UID})
		if err := s.replace(dir, PointerFile, p); err != nil {
			return fmt.Errorf("export %s: %w", b.Workload, err)
		}
	}
	var del marker
	delPath := filepath.Join(dir, DeletedFile)
	if err := s.readJSON(delPath, &del); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	if del.ChangeSeq != 0 && newer(b.ChangeSeq, b.StreamSeq, del.ChangeSeq, del.StreamSeq) {
		if err := os.Remove(delPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("export %s: revive: %w", b.Workload, err)
		}
		s.log.Info("workload revived", zap.Stringer("workload", b.Workload), zap.Uint64("changeSeq", b.ChangeSeq))
	}
	if err := s.syncDir(dir); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	s.log.Debug("exported", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash))
	return nil
}

// Tombstone implements sinks.Sink.
func (s *Sink) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	dir, err := s.WorkloadDir(t.Workload)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	mu := s.lock(dir)
	mu.Lock()
	defer mu.Unlock()

	var del marker
	if err := s.readJSON(filepath.Join(dir, DeletedFile), &del); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if del.ChangeSeq != 0 && !newer(t.ChangeSeq, t.StreamSeq, del.ChangeSeq, del.StreamSeq) {
		return nil // already recorded
	}
	var ptr pointer
	if err := s.readJSON(filepath.Join(dir, PointerFile), &ptr); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if ptr.BomHash == "" {
		// Nothing of this workload was ever exported here (a Deployment of
		// nginx is deleted, say): there is nothing to mark deleted.
		return nil
	}
	if newer(ptr.ChangeSeq, ptr.StreamSeq, t.ChangeSeq, t.StreamSeq) {
		s.log.Info("stale tombstone ignored: a newer BOM exists for this name",
			zap.Stringer("workload", t.Workload), zap.Uint64("changeSeq", t.ChangeSeq))
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	m, _ := json.Marshal(marker{ChangeSeq: t.ChangeSeq, StreamSeq: t.StreamSeq, Time: t.Time.UTC(), UID: t.Workload.UID})
	if err := s.replace(dir, DeletedFile, m); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if err := s.syncDir(dir); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	return nil
}

func (s *Sink) lock(dir string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

// readJSON decodes path into v; a missing file leaves v zero. A file that
// does not decode is logged and treated as missing, so that the next write
// repairs it instead of blocking the workload forever.
func (s *Sink) readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		s.log.Warn("unreadable bookkeeping file, rewriting", zap.String("path", path), zap.Error(err))
	}
	return nil
}

// createOnly stores data as dir/name unless it is already there. Existing
// different bytes are a permanent error: immutable files are never rewritten.
// Without fsync, an existing file that is a strict prefix of data (what a
// machine crash can leave of an unsynced write) is replaced instead.
func (s *Sink) createOnly(ctx context.Context, dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	same := func() (bool, error) {
		have, err := os.ReadFile(final)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !s.fsync && len(have) < len(data) && bytes.Equal(have, data[:len(have)]) {
			s.log.Warn("truncated immutable file, rewriting", zap.String("path", final))
			return false, nil
		}
		if !bytes.Equal(have, data) {
			return false, sinks.Permanent(fmt.Errorf("%s exists with different content", final))
		}
		return true, nil
	}
	if ok, err := same(); ok || err != nil {
		return err
	}
	tmp, err := s.writeTemp(dir, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if ok, err := same(); ok || err != nil {
				return err
			}
			return os.Rename(tmp, final) // a truncated leftover, see above
		}
		// Filesystems without hard links: fall back to rename; a concurrent
		// writer of the same name writes the same bytes.
		return os.Rename(tmp, final)
	}
	return nil
}

// replace atomically replaces dir/name with data.
func (s *Sink) replace(dir, name string, data []byte) error {
	tmp, err := s.writeTemp(dir, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new temporary file in dir, fsynced when the
// sink is durable.
func (s *Sink) writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if werr == nil && s.fsync {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

// syncDir makes dir's entries durable, when the sink is durable.
func (s *Sink) syncDir(dir string) error {
	if !s.fsync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	if cerr := d.Close(); serr == nil {
		serr = cerr
	}
	return serr
}
