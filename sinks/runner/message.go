package runner

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream"
)

// item is one parsed BOMS message: a BOM or a tombstone.
type item struct {
	tombstone bool
	bom       sinks.BOM
	ts        sinks.Tombstone
	workload  schemas.Workload
	changeSeq uint64
	streamSeq uint64
}

// parse reads a BOMS message per the contract in schemas/subjects.go.
func parse(m *stream.Msg) (item, error) {
	h := m.Header
	it := item{streamSeq: m.Seq}
	cs := h.Get(schemas.HeaderChangeSeq)
	seq, err := strconv.ParseUint(cs, 10, 64)
	if err != nil || seq == 0 {
		return it, fmt.Errorf("header %s %q is not a positive decimal", schemas.HeaderChangeSeq, cs)
	}
	it.changeSeq = seq
	at := m.Time
	if v := h.Get(schemas.HeaderEventTime); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return it, fmt.Errorf("header %s %q: %w", schemas.HeaderEventTime, v, err)
		}
		at = t
	}
	if h.Get(schemas.HeaderTombstone) == "true" {
		var w schemas.Workload
		if err := json.Unmarshal(m.Data, &w); err != nil {
			return it, fmt.Errorf("tombstone body: %w", err)
		}
		if w.Cluster == "" || w.UID == "" || w.Kind == "" || w.Name == "" {
			return it, fmt.Errorf("tombstone body: workload identity incomplete")
		}
		reason := h.Get(schemas.HeaderTombstoneReason)
		if reason == "" {
			reason = sinks.ReasonDeleted
		}
		it.tombstone, it.workload = true, w
		it.ts = sinks.Tombstone{Workload: w, Reason: reason, ChangeSeq: seq, StreamSeq: it.streamSeq, Time: at}
	} else {
		w, err := schemas.ParseWorkloadHeader(h.Get(schemas.HeaderWorkload))
		if err != nil {
			return it, err
		}
		hash := h.Get(schemas.HeaderBomHash)
		if !sinks.ValidBomHash(hash) {
			return it, fmt.Errorf("header %s %q is not sha256:<hex>", schemas.HeaderBomHash, hash)
		}
		in := h.Get(schemas.HeaderInputHash)
		if in == "" {
			return it, fmt.Errorf("header %s missing", schemas.HeaderInputHash)
		}
		if len(m.Data) == 0 {
			return it, fmt.Errorf("empty body")
		}
		images, err := schemas.ParseImagesHeader(h.Get(schemas.HeaderImages))
		if err != nil {
			return it, err
		}
		it.workload = w
		it.bom = sinks.BOM{Workload: w, BomHash: hash, InputHash: in, ChangeSeq: seq,
			StreamSeq: it.streamSeq, Time: at, Images: images, Body: m.Data}
	}
	if want := schemas.BOMsSubject(it.workload); m.Subject != want {
		return it, fmt.Errorf("subject %s does not match workload %s (want %s)", m.Subject, it.workload, want)
	}
	return it, nil
}

// ledgerKey is the ledger key of a workload: "w.<cluster>.<uid>". KV keys
// allow [-/_=.a-zA-Z0-9]; tokens that hold other characters are hex-encoded
// behind a "=" that no Kubernetes name contains.
func ledgerKey(w schemas.Workload) string {
	return "w." + keyToken(w.Cluster) + "." + keyToken(w.UID)
}

func keyToken(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '=' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Sprintf("=%x", s)
		}
	}
	return s
}

// entry is the ledger's record of a workload: the last version the sink
// applied (a BOM, or a tombstone).
type entry struct {
	ChangeSeq uint64    `json:"changeSeq"`
	BomHash   string    `json:"bomHash,omitempty"`
	Tombstone string    `json:"tombstone,omitempty"` // the reason, for a tombstone
	StreamSeq uint64    `json:"streamSeq"`
	Time      time.Time `json:"time"`
	Workload  string    `json:"workload"`
}

func (it item) entry() entry {
	e := entry{ChangeSeq: it.changeSeq, StreamSeq: it.streamSeq, Workload: it.workload.String()}
	if it.tombstone {
		e.Tombstone, e.Time = it.ts.Reason, it.ts.Time.UTC()
	} else {
		e.BomHash, e.Time = it.bom.BomHash, it.bom.Time.UTC()
	}
	return e
}
