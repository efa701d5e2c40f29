package file

import (
	"context"
	"fmt"
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

// Sink writes BOMs into a directory tree. It implements sinks.Sink and
// sinks.Locator.
//
// It assumes it is the only writer of its tree (the process that owns the
// data directory): what it learnt of a workload directory the first time it
// looked, it keeps in memory and updates with its own writes.
type Sink struct {
	name   string
	dir    string
	log    *zap.Logger
	fsync  bool
	commit *committer
	locks  [64]sync.Mutex // striped by workload directory

	mu   sync.Mutex
	dirs map[string]dirState // workload directories looked at, by path
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
		dirs: map[string]dirState{}}
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

// Close implements sinks.Sink. Every Export and Tombstone that returned
// nil is in the tree already: there is nothing left to write.
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
