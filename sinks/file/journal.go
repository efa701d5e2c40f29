package file

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// JournalFile, at the root of the tree, records every workload's state: one
// JSON line per version applied (a BOM, or a tombstone), appended as the
// versions are applied and made durable with the BOMs they describe (the
// same flush). It stands in for a state file per workload directory, so
// that a BOM costs its own file, a link and a share of one append. It is
// compacted (one line per workload) when the sink opens it.
const JournalFile = ".bomstream-state.jsonl"

// State is what the sink holds for one workload: the last version applied.
type State struct {
	// Dir is the workload's directory, relative to the tree's root.
	Dir string `json:"dir"`
	// BomHash is the last BOM exported (kept when a tombstone followed).
	BomHash string `json:"bomHash,omitempty"`
	// ChangeSeq and StreamSeq are those of the last version applied.
	ChangeSeq uint64 `json:"changeSeq"`
	StreamSeq uint64 `json:"streamSeq"`
	Time      string `json:"time"`
	UID       string `json:"uid"`
	// Tombstone is the reason ("deleted", "not-serving") when the last
	// version applied was a tombstone: the workload has no current BOM.
	Tombstone string `json:"tombstone,omitempty"`
}

// journal is the JournalFile of one tree, in memory and on disk.
type journal struct {
	root string

	mu      sync.Mutex
	loaded  bool
	states  map[string]State // by Dir
	pending []byte           // lines not written yet (the next batch writes them)
	failed  bool             // the last append failed, perhaps half written
}

// load reads the journal once and rewrites it with one line per workload.
// A torn last line (a crash in the middle of an append) is dropped: the
// version it described was not acknowledged, and comes again.
func (j *journal) load() error {
	if j.loaded {
		return nil
	}
	j.states = map[string]State{}
	path := filepath.Join(j.root, JournalFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var st State
		if json.Unmarshal(sc.Bytes(), &st) != nil || st.Dir == "" {
			continue
		}
		lines++
		if cur, ok := j.states[st.Dir]; !ok || st.ChangeSeq >= cur.ChangeSeq {
			j.states[st.Dir] = st
		}
	}
	if err := os.MkdirAll(j.root, 0o755); err != nil {
		return err
	}
	if lines > len(j.states) || len(b) > 0 && b[len(b)-1] != '\n' {
		if err := j.compact(); err != nil {
			return err
		}
	}
	j.loaded = true
	return nil
}

// compact rewrites the journal with the current state of each workload.
func (j *journal) compact() error {
	var buf bytes.Buffer
	for _, st := range j.states {
		line, _ := json.Marshal(st)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tmp := filepath.Join(j.root, JournalFile+".tmp")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("compact the journal: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(j.root, JournalFile)); err != nil {
		return fmt.Errorf("compact the journal: %w", err)
	}
	return nil
}

// get is the state of the workload in dir (relative), if any.
func (j *journal) get(dir string) (State, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.load(); err != nil {
		return State{}, false, err
	}
	st, ok := j.states[dir]
	return st, ok, nil
}

// put records st; its line waits for the next batch (writePending), which
// the caller then waits for.
func (j *journal) put(st State) error {
	line, err := json.Marshal(st)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.load(); err != nil {
		return err
	}
	j.states[st.Dir] = st
	j.pending = append(append(j.pending, line...), '\n')
	return nil
}

// writePending writes the lines put since the last write, in one call.
func (j *journal) writePending() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.writePendingLocked()
}

// writePendingLocked appends the pending lines in one write. The file is
// opened for each batch, not held: a file system can then turn read-only (or
// be remounted) under the sink, and the lines wait for the next flush.
func (j *journal) writePendingLocked() error {
	if len(j.pending) == 0 {
		return nil
	}
	path := filepath.Join(j.root, JournalFile)
	data := j.pending
	if j.failed {
		// Whatever half line the failed append left ends here, so that it
		// does not swallow the first line of this one (a bad line is skipped).
		data = append([]byte{'\n'}, data...)
	}
	err := appendTo(path, data)
	if errors.Is(err, fs.ErrNotExist) { // the tree was removed under the sink
		if err = os.MkdirAll(j.root, 0o755); err == nil {
			err = appendTo(path, data)
		}
	}
	if err != nil {
		j.failed = true
		return fmt.Errorf("append to %s: %w", path, err)
	}
	j.pending, j.failed = j.pending[:0], false
	return nil
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.writePendingLocked()
}

// ReadStates reads the journal of the tree at root (a tree a file sink
// wrote): the state of every workload, by directory relative to root.
func ReadStates(root string) (map[string]State, error) {
	b, err := os.ReadFile(filepath.Join(root, JournalFile))
	if err != nil {
		return nil, err
	}
	out := map[string]State{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var st State
		if json.Unmarshal(line, &st) != nil || st.Dir == "" {
			continue
		}
		if cur, ok := out[st.Dir]; !ok || st.ChangeSeq >= cur.ChangeSeq {
			out[st.Dir] = st
		}
	}
	return out, nil
}
