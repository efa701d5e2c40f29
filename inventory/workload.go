package inventory

import (
	"sort"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/versions"
)

// Serving states of a workload at a point in time.
const (
	StateServing    = "serving"
	StateDeleted    = schemas.TombstoneDeleted
	StateNotServing = schemas.TombstoneNotServing
)

// Version is one message of a workload's history on BOMS: a BOM's facts,
// or a tombstone.
type Version struct {
	// Time is when the change was observed (the event time), or when the
	// message was stored when it does not say.
	Time      time.Time `json:"time"`
	StreamSeq uint64    `json:"streamSeq"`
	ChangeSeq uint64    `json:"changeSeq"`
	// Tombstone is "" for a BOM, else StateDeleted or StateNotServing.
	Tombstone string `json:"tombstone,omitempty"`
	BomHash   string `json:"bomHash,omitempty"`
	InputHash string `json:"inputHash,omitempty"`
	Facts
	// Unreadable says why the BOM's facts could not be read ("" when they
	// were): such a version is listed, and matches no fact filter.
	Unreadable string `json:"unreadable,omitempty"`

	parsed []parsedVersion // per Runtimes entry
}

// parsedVersion is a runtime's version as versions.Parse read it.
type parsedVersion struct {
	v  versions.Version
	ok bool
}

// State is the serving state the version leaves its workload in.
func (v *Version) State() string {
	if v.Tombstone != "" {
		return v.Tombstone
	}
	return StateServing
}

// Workload is one workload's identity and history, in change order.
type Workload struct {
	ID       schemas.Workload
	Versions []Version
}

// add inserts v in change order; a version already held (the same change
// sequence, stored twice) is kept once. It reports whether v was added.
func (w *Workload) add(v Version) bool {
	i := sort.Search(len(w.Versions), func(i int) bool { return w.Versions[i].ChangeSeq >= v.ChangeSeq })
	if i < len(w.Versions) && w.Versions[i].ChangeSeq == v.ChangeSeq {
		return false
	}
	w.Versions = append(w.Versions, Version{})
	copy(w.Versions[i+1:], w.Versions[i:])
	w.Versions[i] = v
	return true
}

// at is the index of the version in effect at t (-1: none yet), as
// `bomstream get --at` reads it: the last one observed at or before t,
// where a version observed earlier than its predecessor takes effect with
// it. A zero t is now: the last version.
func (w *Workload) at(t time.Time) int {
	if t.IsZero() {
		return len(w.Versions) - 1
	}
	var effective time.Time
	i := -1
	for j := range w.Versions {
		if w.Versions[j].Time.After(effective) {
			effective = w.Versions[j].Time
		}
		if effective.After(t) {
			break
		}
		i = j
	}
	return i
}

// firstSeen is when the workload's first version was observed.
func (w *Workload) firstSeen() time.Time {
	if len(w.Versions) == 0 {
		return time.Time{}
	}
	return w.Versions[0].Time
}

// Version is the version with change sequence seq.
func (w *Workload) Version(seq uint64) (Version, bool) {
	i := sort.Search(len(w.Versions), func(i int) bool { return w.Versions[i].ChangeSeq >= seq })
	if i < len(w.Versions) && w.Versions[i].ChangeSeq == seq {
		return w.Versions[i], true
	}
	return Version{}, false
}
