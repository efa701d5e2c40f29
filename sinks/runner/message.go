package runner

import (
	"fmt"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream/engine"
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

// parse reads a BOMS message (see schemas.BOMMessage).
func parse(m *engine.Msg) (item, error) {
	it := item{streamSeq: m.Seq}
	bm, err := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
	if err != nil {
		return it, err
	}
	at := bm.EventTime
	if at.IsZero() {
		at = m.Time
	}
	it.workload, it.changeSeq = bm.Workload, bm.ChangeSeq
	if bm.IsTombstone() {
		it.tombstone = true
		it.ts = sinks.Tombstone{Workload: bm.Workload, Reason: bm.Tombstone, ChangeSeq: bm.ChangeSeq, StreamSeq: it.streamSeq, Time: at}
	} else {
		it.bom = sinks.BOM{Workload: bm.Workload, BomHash: bm.BomHash, InputHash: bm.InputHash, ChangeSeq: bm.ChangeSeq,
			StreamSeq: it.streamSeq, Time: at, Images: bm.Images, Body: bm.BOM}
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
