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
	// LatestFile is a symbolic link to the workload's current BOM; there is
	// none while the workload is deleted or not serving.
	LatestFile = "latest.cdx.json"
	// StateFile records the last version applied: its BOM hash, change
	// sequence, and the tombstone reason when it is not current.
	StateFile = "latest.json"
	// Suffix ends every BOM file: <bomhash-hex>.cdx.json.
	Suffix = ".cdx.json"
	// tmpPrefix starts the temporary files a crash may leave; they are
	// removed when the sink first looks at their directory.
	tmpPrefix = ".tmp-"
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
	// Fsync makes every write durable before Export returns. Unset means
	// true. Exports in flight at the same moment share one flush of the
	// file system (group commit), so durability costs one wait per batch,
	// not four per BOM. False skips it: while the machine stays up, files
	// still appear atomically; a machine crash (not a process crash) may
	// lose the last exports although the runner recorded them as exported.
	// A torn BOM file is noticed (its name is its hash) and rewritten by the
	// next Export of the same BOM; a lost one comes back with
	// `bomstream replay --ignore-ledger`.
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
//
// It assumes it is the only writer of its tree (the process that owns the
// data directory): it keeps what it knows of each workload directory in
// memory.
type Sink struct {
	name   string
	dir    string
	log    *zap.Logger
	fsync  bool
	commit *committer
	locks  [64]sync.Mutex // striped by workload directory

	mu     sync.Mutex
	states map[string]*dirState // by workload directory, once looked at
}

// dirState is what the sink knows of one workload directory; its stripe
// lock guards it.
type dirState struct {
	exists bool
	state  state
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
	s := &Sink{name: cfg.Name, dir: filepath.Clean(cfg.Dir), fsync: cfg.durable(), log: log.With(zap.String("sink", cfg.Name)),
		states: map[string]*dirState{}}
	s.commit = &committer{flush: s.flush}
	return s, nil
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

// state is the content of latest.json.
type state struct {
	// BomHash is the last BOM exported (kept when a tombstone followed).
	BomHash string `json:"bomHash,omitempty"`
	// ChangeSeq, StreamSeq and Time are those of the last version applied,
	// a BOM or a tombstone.
	ChangeSeq uint64    `json:"changeSeq"`
	StreamSeq uint64    `json:"streamSeq"`
	Time      time.Time `json:"time"`
	UID       string    `json:"uid"`
	// Tombstone is the reason ("deleted", "not-serving") when the last
	// version applied was a tombstone: the workload has no current BOM.
	Tombstone string `json:"tombstone,omitempty"`
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
	if !matches(b.Body, b.BomHash) {
		return sinks.Permanent(fmt.Errorf("export %s: body does not match bom hash %s", b.Workload, b.BomHash))
	}
	if !json.Valid(b.Body) {
		return sinks.Permanent(fmt.Errorf("export %s: body is not JSON", b.Workload))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	if err := s.export(dir, b); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	if err := s.durable(ctx); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	return nil
}

func (s *Sink) export(dir string, b sinks.BOM) error {
	mu := s.lock(dir)
	mu.Lock()
	defer mu.Unlock()
	ds, err := s.look(dir)
	if err != nil {
		return err
	}
	if !ds.exists {
		if err := mkdir(dir); err != nil {
			return err
		}
		ds.exists = true
	}
	file := strings.TrimPrefix(b.BomHash, "sha256:") + Suffix
	if err := s.store(dir, file, b.BomHash, b.Body); err != nil {
		return err
	}
	cur := ds.state
	if cur.ChangeSeq > b.ChangeSeq || (cur.ChangeSeq == b.ChangeSeq && cur.Tombstone != "") {
		return nil // an older version: stored as history, the current state stays
	}
	if cur.ChangeSeq == b.ChangeSeq && cur.BomHash == b.BomHash {
		return s.link(dir, file, true, true) // the same version again: repair the link only
	}
	if err := s.link(dir, file, cur.BomHash != "" || cur.Tombstone != "", false); err != nil {
		return err
	}
	next := state{BomHash: b.BomHash, ChangeSeq: b.ChangeSeq, StreamSeq: b.StreamSeq, Time: b.Time.UTC(), UID: b.Workload.UID}
	if err := s.writeState(dir, next); err != nil {
		return err
	}
	if cur.Tombstone != "" {
		s.log.Info("workload is current again", zap.Stringer("workload", b.Workload), zap.Uint64("changeSeq", b.ChangeSeq))
	}
	ds.state = next
	return nil
}

// Tombstone implements sinks.Sink: the latest link goes, the state says why.
func (s *Sink) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	dir, err := s.WorkloadDir(t.Workload)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	wrote, err := s.tombstone(dir, t)
	if err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if wrote {
		if err := s.durable(ctx); err != nil {
			return fmt.Errorf("tombstone %s: %w", t.Workload, err)
		}
	}
	return nil
}

func (s *Sink) tombstone(dir string, t sinks.Tombstone) (bool, error) {
	mu := s.lock(dir)
	mu.Lock()
	defer mu.Unlock()
	ds, err := s.look(dir)
	if err != nil {
		return false, err
	}
	cur := ds.state
	if cur.BomHash == "" {
		// Nothing of this workload was ever exported here (a Deployment of
		// nginx is deleted, say): there is nothing to retire.
		return false, nil
	}
	if cur.ChangeSeq >= t.ChangeSeq {
		if cur.ChangeSeq > t.ChangeSeq {
			s.log.Info("stale tombstone ignored: a newer version exists for this name",
				zap.Stringer("workload", t.Workload), zap.Uint64("changeSeq", t.ChangeSeq))
		}
		return false, nil
	}
	if err := os.Remove(filepath.Join(dir, LatestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	reason := t.Reason
	if reason == "" {
		reason = sinks.ReasonDeleted
	}
	next := state{BomHash: cur.BomHash, ChangeSeq: t.ChangeSeq, StreamSeq: t.StreamSeq, Time: t.Time.UTC(), UID: t.Workload.UID, Tombstone: reason}
	if err := s.writeState(dir, next); err != nil {
		return false, err
	}
	ds.state = next
	return true, nil
}

func (s *Sink) lock(dir string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

// look returns what the sink knows of dir, reading it the first time: the
// state file, and temporary files a crash left behind (removed). The
// caller holds dir's stripe lock.
func (s *Sink) look(dir string) (*dirState, error) {
	s.mu.Lock()
	ds, ok := s.states[dir]
	s.mu.Unlock()
	if ok {
		return ds, nil
	}
	ds = &dirState{}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		ds.exists = true
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
					s.log.Info("removed a temporary file left by a crash", zap.String("path", filepath.Join(dir, e.Name())))
				}
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, StateFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			if err := json.Unmarshal(b, &ds.state); err != nil {
				// Rewritten by the next version; meanwhile any version is newer.
				s.log.Warn("unreadable state file, rewriting", zap.String("path", filepath.Join(dir, StateFile)), zap.Error(err))
				ds.state = state{}
			}
		}
	}
	s.mu.Lock()
	s.states[dir] = ds
	s.mu.Unlock()
	return ds, nil
}

// store writes the immutable file dir/name holding body, unless it is there
// already. Its name is the hash of its bytes, so a file whose bytes do not
// hash to it is damage (a write torn by a crash) and is replaced. A new file
// is written in place, not renamed into place: nothing points at it until
// the latest link does, after its bytes are written.
func (s *Sink) store(dir, name, hash string, body []byte) error {
	final := filepath.Join(dir, name)
	f, err := os.OpenFile(final, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, werr := f.Write(body)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(final)
		}
		return werr
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	have, err := os.ReadFile(final)
	if err != nil {
		return err
	}
	if matches(have, hash) {
		return nil
	}
	s.log.Warn("damaged BOM file, rewriting", zap.String("path", final))
	return s.replace(dir, name, body)
}

// mkdir makes a workload directory: one system call when its parent is there.
func mkdir(dir string) error {
	err := os.Mkdir(dir, 0o755)
	switch {
	case err == nil || errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	}
	return err
}

// link points dir/latest.cdx.json at file, atomically. replace says a link
// may be there already: it is then swapped through a temporary name (and,
// with check, left alone when it points at file already); otherwise the
// link is made in one call.
func (s *Sink) link(dir, file string, replace, check bool) error {
	final := filepath.Join(dir, LatestFile)
	if check {
		if target, err := os.Readlink(final); err == nil && target == file {
			return nil
		}
	}
	if !replace {
		err := os.Symlink(file, final)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmp := filepath.Join(dir, tmpPrefix+"link")
	_ = os.Remove(tmp)
	if err := os.Symlink(file, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

func (s *Sink) writeState(dir string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return s.replace(dir, StateFile, b)
}

// replace atomically replaces dir/name with data: a temporary file, renamed.
func (s *Sink) replace(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

// durable waits until what this goroutine wrote is on disk, when the sink
// is durable: its writes join the next flush of the file system.
func (s *Sink) durable(ctx context.Context) error {
	if !s.fsync {
		return nil
	}
	return s.commit.wait(ctx)
}

func matches(body []byte, hash string) bool {
	sum := sha256.Sum256(body)
	var buf [64]byte
	hex.Encode(buf[:], sum[:])
	return len(hash) == 71 && bytes.Equal(buf[:], []byte(hash[7:]))
}
