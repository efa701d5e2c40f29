package runner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
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

var bomHashPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// parse reads a BOMS message per the contract in schemas/subjects.go.
func parse(m jetstream.Msg, meta *jetstream.MsgMetadata) (item, error) {
	h := m.Headers()
	it := item{streamSeq: meta.Sequence.Stream}
	cs := h.Get(schemas.HeaderChangeSeq)
	seq, err := strconv.ParseUint(cs, 10, 64)
	if err != nil || seq == 0 {
		return it, fmt.Errorf("header %s %q is not a positive decimal", schemas.HeaderChangeSeq, cs)
	}
	it.changeSeq = seq
	if h.Get(schemas.HeaderTombstone) == "true" {
		var w schemas.Workload
		if err := json.Unmarshal(m.Data(), &w); err != nil {
			return it, fmt.Errorf("tombstone body: %w", err)
		}
		if w.Cluster == "" || w.UID == "" || w.Kind == "" || w.Name == "" {
			return it, fmt.Errorf("tombstone body: workload identity incomplete")
		}
		it.tombstone, it.workload = true, w
		it.ts = sinks.Tombstone{Workload: w, ChangeSeq: seq, StreamSeq: it.streamSeq, Time: meta.Timestamp}
	} else {
		w, err := schemas.ParseWorkloadHeader(h.Get(schemas.HeaderWorkload))
		if err != nil {
			return it, err
		}
		hash := h.Get(schemas.HeaderBomHash)
		if !bomHashPattern.MatchString(hash) {
			return it, fmt.Errorf("header %s %q is not sha256:<hex>", schemas.HeaderBomHash, hash)
		}
		in := h.Get(schemas.HeaderInputHash)
		if in == "" {
			return it, fmt.Errorf("header %s missing", schemas.HeaderInputHash)
		}
		if len(m.Data()) == 0 {
			return it, fmt.Errorf("empty body")
		}
		it.workload = w
		it.bom = sinks.BOM{Workload: w, BomHash: hash, InputHash: in, ChangeSeq: seq,
			StreamSeq: it.streamSeq, Time: meta.Timestamp, Body: m.Data()}
	}
	if want := schemas.BOMsSubject(it.workload); m.Subject() != want {
		return it, fmt.Errorf("subject %s does not match workload %s (want %s)", m.Subject(), it.workload, want)
	}
	return it, nil
}

// Ledger keys. KV keys allow [-/_=.a-zA-Z0-9]; tokens that hold other
// characters are hex-encoded behind a "=" that no Kubernetes name contains.
func (it item) ledgerKey() string {
	if it.tombstone {
		return "tombstone." + keyToken(it.workload.Cluster) + "." + keyToken(it.workload.UID) + "." + strconv.FormatUint(it.changeSeq, 10)
	}
	return strings.Replace(it.bom.BomHash, ":", ".", 1)
}

func (it item) latestKey() string {
	return "latest." + keyToken(it.workload.Cluster) + "." + keyToken(it.workload.UID)
}

func keyToken(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '=' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Sprintf("=%x", s)
		}
	}
	return s
}

// record is the value stored under a ledger key.
type record struct {
	StreamSeq uint64    `json:"streamSeq"`
	ChangeSeq uint64    `json:"changeSeq"`
	Time      time.Time `json:"time"`
	Workload  string    `json:"workload"`
}

func (it item) record() []byte {
	t := it.bom.Time
	if it.tombstone {
		t = it.ts.Time
	}
	b, _ := json.Marshal(record{StreamSeq: it.streamSeq, ChangeSeq: it.changeSeq, Time: t.UTC(), Workload: it.workload.String()})
	return b
}
