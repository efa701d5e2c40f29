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

// dirState is what a workload directory holds, as the sink learnt it on its
// first look (which also removes what a crash left there) and has kept
// since, through its own writes.
type dirState struct {
	// latest is the bomHash of latest.cdx.json: "" when there is none,
	// unknownLatest when the directory had one before this process looked.
	latest string
	// tombstone is the change sequence of tombstone.json (0: none there),
	// and retired the bomHash it names.
	tombstone uint64
	retired   string
}

// unknownLatest stands for a latest.cdx.json whose BOM is not read yet.
const unknownLatest = "?"

// Export implements sinks.Sink: the BOM's file, then, unless the BOM is
// superseded, the latest link (and the tombstone goes: the workload is
// current again). It returns once all of it is durable.
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	dir, err := s.WorkloadDir(b.Workload)
	if err != nil {
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

func (s *Sink) export(dir string, b sinks.BOM) (err error) {
	mu := s.lock(dir)
	mu.Lock()
	defer mu.Unlock()
	defer s.forgetOnError(dir, &err)
	st, exists, err := s.look(dir)
	if err != nil {
		return err
	}
	if !exists {
		if err := mkdir(dir); err != nil {
			return err
		}
	}
	file := bomFile(b.BomHash)
	if err := s.store(dir, file, b.BomHash, b.Body); err != nil {
		return err
	}
	if b.Superseded || (st.latest == b.BomHash && st.tombstone == 0) {
		s.remember(dir, st) // history only, or current already
		return nil
	}
	if st.tombstone != 0 {
		// The marker goes first: tombstone.json is never there beside a
		// latest.cdx.json, whatever a crash interrupts.
		if err := os.Remove(filepath.Join(dir, TombstoneFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		st.tombstone, st.retired = 0, ""
		s.log.Info("workload is current again", zap.Stringer("workload", b.Workload), zap.Uint64("changeSeq", b.ChangeSeq))
	}
	if err := s.link(dir, file, st.latest != "", st.latest == unknownLatest); err != nil {
		return err
	}
	st.latest = b.BomHash
	s.remember(dir, st)
	return nil
}

// Tombstone implements sinks.Sink: the latest link goes, tombstone.json says
// why. A stale tombstone, and one of a workload with no directory (nothing
// exported here), change nothing.
func (s *Sink) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	dir, err := s.WorkloadDir(t.Workload)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if t.Stale {
		s.log.Info("stale tombstone ignored: a newer version exists for this name",
			zap.Stringer("workload", t.Workload), zap.Uint64("changeSeq", t.ChangeSeq))
		return nil
	}
	applies, err := s.tombstone(dir, t)
	if err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if applies {
		if err := s.durable(ctx); err != nil {
			return fmt.Errorf("tombstone %s: %w", t.Workload, err)
		}
	}
	return nil
}

func (s *Sink) tombstone(dir string, t sinks.Tombstone) (applies bool, err error) {
	mu := s.lock(dir)
	mu.Lock()
	defer mu.Unlock()
	defer s.forgetOnError(dir, &err)
	st, exists, err := s.look(dir)
	if err != nil || !exists {
		// Nothing of this workload was exported here (a Deployment of
		// nginx is deleted, say): there is nothing to retire.
		return false, err
	}
	if st.tombstone == t.ChangeSeq {
		return true, nil // recorded already; durable once the caller's flush is
	}
	retired := st.retired
	if st.latest != "" {
		if retired, err = s.latestHash(dir, st.latest); err != nil {
			return false, err
		}
	}
	if err := os.Remove(filepath.Join(dir, LatestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	st.latest = ""
	m := marker{Reason: t.Reason, ChangeSeq: t.ChangeSeq, Time: t.Time.UTC().Format(time.RFC3339Nano), BomHash: retired}
	if m.Reason == "" {
		m.Reason = sinks.ReasonDeleted
	}
	data, _ := json.Marshal(m)
	if err := s.replace(dir, TombstoneFile, data); err != nil {
		return false, err
	}
	st.tombstone, st.retired = t.ChangeSeq, retired
	s.remember(dir, st)
	return true, nil
}

// latestHash is the bomHash of dir's latest.cdx.json, known as latest
// unless it is unknownLatest: then the file is read.
func (s *Sink) latestHash(dir, latest string) (string, error) {
	if latest != unknownLatest {
		return latest, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, LatestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return schemas.BomHash(b), nil
}

func (s *Sink) lock(dir string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

// look returns what the workload directory dir holds, and whether it
// exists. The first time it looks at a directory it reads it, and removes
// the temporary files a crash left there. The caller holds dir's lock.
func (s *Sink) look(dir string) (dirState, bool, error) {
	s.mu.Lock()
	st, ok := s.dirs[dir]
	s.mu.Unlock()
	if ok {
		return st, true, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dirState{}, false, nil
	}
	if err != nil {
		return dirState{}, false, err
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case strings.HasPrefix(n, tmpPrefix):
			if err := os.Remove(filepath.Join(dir, n)); err == nil {
				s.log.Info("removed a temporary file left by a crash", zap.String("path", filepath.Join(dir, n)))
			}
		case n == LatestFile:
			st.latest = unknownLatest
		case n == TombstoneFile:
			m, err := readMarker(filepath.Join(dir, n))
			if err != nil {
				return dirState{}, false, err
			}
			st.tombstone, st.retired = max(m.ChangeSeq, 1), m.BomHash // an unreadable marker is there all the same
		}
	}
	s.remember(dir, st)
	return st, true, nil
}

// remember records what dir holds after a write of the sink's.
func (s *Sink) remember(dir string, st dirState) {
	s.mu.Lock()
	s.dirs[dir] = st
	s.mu.Unlock()
}

// forgetOnError drops what the sink knows of dir when *err is set: a write
// failed half way, or the directory is gone, and the next call looks again.
func (s *Sink) forgetOnError(dir string, err *error) {
	if *err != nil {
		s.mu.Lock()
		delete(s.dirs, dir)
		s.mu.Unlock()
	}
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
	// A leftover at tmp is rare (look removes a crash's): it is removed
	// only when it is in the way, not before every link.
	tmp := filepath.Join(dir, tmpPrefix+"link")
	err := os.Link(src, tmp)
	if errors.Is(err, fs.ErrExist) {
		_ = os.Remove(tmp)
		err = os.Link(src, tmp)
	}
	if err != nil {
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

// durable waits until what this goroutine wrote is durable: it joins the
// next flush of the file system (group commit). Without fsync there is
// nothing to wait for.
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
