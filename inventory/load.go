package inventory

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// decoded is one BOMS message read for the index.
type decoded struct {
	seq      uint64
	stored   time.Time
	raw      *jetstream.RawStreamMsg
	msg      schemas.BOMMessage // without its body
	facts    Facts
	err      error // the codec refused the message
	factsErr error // the BOM's facts could not be read
}

// Load reads the BOMS messages stored after the last one the index holds,
// up to the last one stored when it is called, and adds them (see
// follow.Load; a follow.Follower keeps the index current after). It
// returns how many messages it read.
func (ix *Index) Load(ctx context.Context, r follow.Reader) (int, error) {
	from := ix.LastSeq() + 1
	n, err := follow.Load(ctx, r, schemas.StreamBOMs, ix)
	if err != nil {
		ix.Settle() // what was read before the error is listed
		return n, fmt.Errorf("load the inventory from BOMS seq %d: %w", from, err)
	}
	return n, nil
}

// Apply adds BOMS messages, in stream order (follow.Index): they are
// decoded in parallel (the codec schemas.DecodeBOMMessage, then
// ReadFacts), then added under the write lock. A workload they add or
// rename is listed in name order once the index settles (Settle).
func (ix *Index) Apply(msgs []*jetstream.RawStreamMsg) {
	b := make([]decoded, len(msgs))
	for i, m := range msgs {
		b[i] = decoded{seq: m.Sequence, stored: m.Time, raw: m}
	}
	stream.Parallel(b, (*decoded).decode)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i := range b {
		ix.apply(&b[i])
	}
}

// Settle lists the workloads added or renamed since it was last called in
// name order (follow.Index).
func (ix *Index) Settle() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.resort()
}

// LastSeq is the last BOMS sequence the index has read (follow.Index).
func (ix *Index) LastSeq() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.lastSeq
}

func (d *decoded) decode() {
	m, err := schemas.DecodeBOMMessage(d.raw.Subject, d.raw.Header, d.raw.Data)
	d.raw = nil
	if err != nil {
		d.err = fmt.Errorf("BOMS seq %d: %w", d.seq, err)
		return
	}
	if !m.IsTombstone() {
		d.facts, d.factsErr = ReadFacts(m.BOM)
	}
	m.BOM = nil
	d.msg = m
}
