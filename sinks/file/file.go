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
	// LatestFile is the workload's current BOM: a hard link to its
	// <bomhash>.cdx.json, so that it reads as a plain file everywhere (cat,
	// Git, object-store syncs); there is none while the workload is deleted
	// or not serving.
	LatestFile = "latest.cdx.json"
	// TombstoneFile is there while the workload has no current BOM, saying
	// why: {"reason","changeSeq","time"}.
	TombstoneFile = "tombstone.json"
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
	// FlushInterval bounds how long, under load, a durable sink holds a
	// flush back; default DefaultFlushInterval, "0s" for never. After a
	// flush that served more than one export, the next starts no sooner
	// than five times that flush's duration (at least 1 ms, at most
	// FlushInterval) after it started, and the exports that arrive
	// meanwhile share it: fewer, larger flushes where they are slow (syncfs
	// writes back the whole file system, at a cost that is mostly per call;
	// on ext4 this raised the durable rate by about a third), a millisecond
	// where they are cheap. An export that arrives alone is flushed at once.
	FlushInterval *time.Duration `yaml:"flushInterval"`
}

// DefaultFlushInterval is Config.FlushInterval when unset.
const DefaultFlushInterval = 10 * time.Millisecond

// flushInterval reports the effective FlushInterval.
func (c Config) flushInterval() time.Duration {
	if c.FlushInterval == nil {
		return DefaultFlushInterval
	}
	return *c.FlushInterval
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
	if d := c.flushInterval(); d < 0 || d > time.Second {
		return fmt.Errorf("flushInterval: %s is outside 0s to 1s", d)
	}
	return nil
}

// Sink writes BOMs into a directory tree. It implements sinks.Sink.
//
// It assumes it is the only writer of its tree (the process that owns the
// data directory): it keeps what it knows of each workload directory in
// memory.
type Sink struct {
	name    string
	dir     string
	log     *zap.Logger
	fsync   bool
	commit  *committer
	journal *journal
	locks   [64]sync.Mutex // striped by workload directory

	mu   sync.Mutex
	seen map[string]bool // workload directories looked at (stale temporary files removed)
}

// SinkType is the registry entry of the file sink.
var SinkType = sinks.Type{
	NewConfig: func() sinks.Config { return &Config{} },
	New: func(_ context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
		c := *cfg.(*Config)
		c.Name = deps.Name
		return New(c, deps.Log)
	},
	// Exports are local and share one flush per group commit: the more
	// wait together, the fewer flushes per BOM (on ext4, 256 in flight
	// export about 40% more BOMs per second than 64).
	Concurrency: 256,
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
		seen: map[string]bool{}}
	s.journal = &journal{root: s.dir}
	s.commit = &committer{flush: s.flush}
	if s.fsync {
		s.commit.interval = cfg.flushInterval()
	}
	return s, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Dir is the root of the tree.
func (s *Sink) Dir() string { return s.dir }

// Close implements sinks.Sink: the journal is closed.
func (s *Sink) Close() error { return s.journal.close() }

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

// Export implements sinks.Sink.
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	dir, err := s.WorkloadDir(b.Workload)
	if err != nil {
		return err
	}
	if err := b.Check(); err != nil {
		return err
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
	rel, cur, known, err := s.look(dir)
	if err != nil {
		return err
	}
	if !known {
		if err := mkdir(dir); err != nil {
			return err
		}
	}
	file := strings.TrimPrefix(b.BomHash, "sha256:") + Suffix
	if err := s.store(dir, file, b.BomHash, b.Body); err != nil {
		return err
	}
	if cur.ChangeSeq > b.ChangeSeq || (cur.ChangeSeq == b.ChangeSeq && cur.Tombstone != "") {
		return nil // an older version: stored as history, the current state stays
	}
	if cur.ChangeSeq == b.ChangeSeq && cur.BomHash == b.BomHash {
		return s.link(dir, file, true, true) // the same version again: repair the link only
	}
	if err := s.link(dir, file, cur.BomHash != "", false); err != nil {
		return err
	}
	if cur.Tombstone != "" {
		if err := os.Remove(filepath.Join(dir, TombstoneFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s.log.Info("workload is current again", zap.Stringer("workload", b.Workload), zap.Uint64("changeSeq", b.ChangeSeq))
	}
	return s.journal.put(State{Dir: rel, BomHash: b.BomHash, ChangeSeq: b.ChangeSeq, StreamSeq: b.StreamSeq,
		Time: b.Time.UTC().Format(time.RFC3339Nano), UID: b.Workload.UID})
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
	rel, cur, _, err := s.look(dir)
	if err != nil {
		return false, err
	}
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
	at := t.Time.UTC().Format(time.RFC3339Nano)
	marker, _ := json.Marshal(struct {
		Reason    string `json:"reason"`
		ChangeSeq uint64 `json:"changeSeq"`
		Time      string `json:"time"`
	}{reason, t.ChangeSeq, at})
	if err := s.replace(dir, TombstoneFile, marker); err != nil {
		return false, err
	}
	next := State{Dir: rel, BomHash: cur.BomHash, ChangeSeq: t.ChangeSeq, StreamSeq: t.StreamSeq, Time: at, UID: t.Workload.UID, Tombstone: reason}
	if err := s.journal.put(next); err != nil {
		return false, err
	}
	return true, nil
}

func (s *Sink) lock(dir string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

// look returns the journal's state of the workload directory dir (and dir
// relative to the tree), and whether the directory is known to exist. The
// first time it sees a directory the journal knows, it removes the temporary
// files a crash left there. The caller holds dir's stripe lock.
func (s *Sink) look(dir string) (rel string, st State, known bool, err error) {
	rel, err = filepath.Rel(s.dir, dir)
	if err != nil {
		return "", State{}, false, err
	}
	rel = filepath.ToSlash(rel)
	st, known, err = s.journal.get(rel)
	if err != nil || !known {
		return rel, st, known, err
	}
	s.mu.Lock()
	seen := s.seen[dir]
	s.seen[dir] = true
	s.mu.Unlock()
	if !seen {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return rel, st, false, nil // the tree lost it: made again, written again
		}
		if err != nil {
			return rel, st, known, err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
					s.log.Info("removed a temporary file left by a crash", zap.String("path", filepath.Join(dir, e.Name())))
				}
			}
		}
	}
	return rel, st, known, nil
}

// store writes the immutable file dir/name holding body, unless it is there
// already. Its name is the hash of its bytes, so a file whose bytes do not
// hash to it is damage (a write torn by a crash) and is replaced. A new file
// is written in place, not renamed into place: nothing points at it until
// the latest link does, after its bytes are written.
func (s *Sink) store(dir, name, hash string, body []byte) error {
	final := filepath.Join(dir, name)
	err := createNew(final, body)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		if err != nil {
			_ = os.Remove(final) // a partial file, if the write failed
		}
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

// link makes dir/latest.cdx.json the file dir/file, atomically, as a hard
// link: one call when there is no latest yet; through a temporary name when
// replace says there may be one (with check, a latest that is that file
// already is left alone).
func (s *Sink) link(dir, file string, replace, check bool) error {
	final, src := filepath.Join(dir, LatestFile), filepath.Join(dir, file)
	if check {
		a, errA := os.Stat(final)
		b, errB := os.Stat(src)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return nil
		}
	}
	if !replace {
		err := os.Link(src, final)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmp := filepath.Join(dir, tmpPrefix+"link")
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
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

// durable waits until what this goroutine wrote is in the tree: its
// journal lines join the next batch written (group commit), and when the
// sink is durable that batch ends with a flush of the file system.
func (s *Sink) durable(ctx context.Context) error {
	return s.commit.wait(ctx)
}

func matches(body []byte, hash string) bool {
	sum := sha256.Sum256(body)
	var buf [64]byte
	hex.Encode(buf[:], sum[:])
	return len(hash) == 71 && bytes.Equal(buf[:], []byte(hash[7:]))
}
