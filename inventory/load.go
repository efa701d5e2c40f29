package inventory

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// Source is where the index reads BOMS: a stream.Reader.
type Source interface {
	// Messages calls fn in stream order for every message of streamName
	// from fromSeq up to the last one stored when it was called.
	Messages(ctx context.Context, streamName, subject string, fromSeq uint64, fn func(*jetstream.RawStreamMsg) error) error
	// State reports the stream's last sequence.
	State(ctx context.Context, streamName string) (stream.StreamState, error)
}

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

// batchSize is how many messages are decoded together, one share per CPU.
const batchSize = 2048

// Load reads the BOMS messages stored after the last one the index holds,
// up to the last one stored when it is called, and adds them. Messages are
// read in stream order and decoded in parallel (the codec
// schemas.DecodeBOMMessage, then ReadFacts), in batches that are applied
// in order, each under the write lock. It returns how many messages it
// read.
func (ix *Index) Load(ctx context.Context, src Source) (int, error) {
	ix.mu.RLock()
	from := ix.lastSeq + 1
	ix.mu.RUnlock()
	batches := make(chan []decoded, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range batches {
			stream.Parallel(b, (*decoded).decode)
			ix.mu.Lock()
			for i := range b {
				ix.apply(&b[i])
			}
			ix.mu.Unlock()
		}
	}()
	n := 0
	cur := make([]decoded, 0, batchSize)
	err := src.Messages(ctx, schemas.StreamBOMs, "", from, func(m *jetstream.RawStreamMsg) error {
		cur = append(cur, decoded{seq: m.Sequence, stored: m.Time, raw: m})
		n++
		if len(cur) == batchSize {
			batches <- cur
			cur = make([]decoded, 0, batchSize)
		}
		return nil
	})
	if len(cur) > 0 {
		batches <- cur
	}
	close(batches)
	<-done
	ix.mu.Lock()
	ix.resort()
	ix.mu.Unlock()
	if err != nil {
		return n, fmt.Errorf("load the inventory from BOMS seq %d: %w", from, err)
	}
	return n, nil
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

// Follow keeps the index current: every interval it asks BOMS for its
// last sequence and loads what was stored since, until ctx ends. A read
// that fails is reported to onErr (when set) and tried again at the next
// tick. It reads through ordered consumers: nothing durable is left on
// the server.
func (ix *Index) Follow(ctx context.Context, src Source, interval time.Duration, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := src.State(ctx, schemas.StreamBOMs)
		if err == nil && st.LastSeq > ix.Stats().LastSeq {
			_, err = ix.Load(ctx, src)
		}
		if err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
	}
}
