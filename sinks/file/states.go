package file

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// marker is the content of tombstone.json.
type marker struct {
	Reason    string `json:"reason"` // sinks.ReasonDeleted or sinks.ReasonNotServing
	ChangeSeq uint64 `json:"changeSeq"`
	Time      string `json:"time"`              // the event's, RFC 3339
	BomHash   string `json:"bomHash,omitempty"` // the BOM that was latest until then
}

// readMarker reads a tombstone.json; one that does not parse reads as a
// marker with no fields.
func readMarker(path string) (marker, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return marker{}, err
	}
	var m marker
	_ = json.Unmarshal(b, &m)
	return m, nil
}

// State is what the tree says of one workload.
type State struct {
	// Dir is the workload's directory, relative to the tree's root.
	Dir string
	// BomHash is the BOM latest.cdx.json holds or, while the workload is
	// tombstoned, the one it held until then (from tombstone.json).
	BomHash string
	// Tombstone is the reason ("deleted", "not-serving") while the workload
	// has no current BOM; ChangeSeq and Time are then the tombstone's. The
	// tree records no change sequence for a current BOM.
	Tombstone string
	ChangeSeq uint64
	Time      string
}

// ReadStates reads the tree at root (a tree a file sink wrote): the state
// of every workload directory (<cluster>/<namespace>/<kind>/<name>), by its
// path relative to root, with slashes.
func ReadStates(root string) (map[string]State, error) {
	out := map[string]State{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.Count(rel, "/") < 3 {
			return nil
		}
		st, err := readState(p)
		if err != nil {
			return err
		}
		st.Dir = rel
		out[rel] = st
		return filepath.SkipDir
	})
	return out, err
}

// readState reads the latest link and the tombstone marker of dir.
func readState(dir string) (State, error) {
	var st State
	b, err := os.ReadFile(filepath.Join(dir, LatestFile))
	switch {
	case err == nil:
		st.BomHash = schemas.BomHash(b)
	case !errors.Is(err, fs.ErrNotExist):
		return State{}, err
	}
	m, err := readMarker(filepath.Join(dir, TombstoneFile))
	switch {
	case err == nil:
		st.Tombstone, st.ChangeSeq, st.Time = m.Reason, m.ChangeSeq, m.Time
		if st.BomHash == "" {
			st.BomHash = m.BomHash
		}
	case !errors.Is(err, fs.ErrNotExist):
		return State{}, err
	}
	return st, nil
}
