package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
)

// Range is a run of stream sequences, First to Last inclusive.
type Range struct{ First, Last uint64 }

// Len is how many sequences the range holds.
func (r Range) Len() uint64 { return r.Last - r.First + 1 }

func (r Range) String() string {
	if r.First == r.Last {
		return strconv.FormatUint(r.First, 10)
	}
	return strconv.FormatUint(r.First, 10) + "-" + strconv.FormatUint(r.Last, 10)
}

// Ranges is a sorted list of disjoint ranges.
type Ranges []Range

// Len is how many sequences the ranges hold.
func (rs Ranges) Len() uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// Contains reports whether seq is in one of the ranges.
func (rs Ranges) Contains(seq uint64) bool {
	_, found := slices.BinarySearchFunc(rs, seq, func(r Range, s uint64) int {
		switch {
		case r.Last < s:
			return -1
		case r.First > s:
			return 1
		}
		return 0
	})
	return found
}

// Within is the part of the ranges between from and to, inclusive.
func (rs Ranges) Within(from, to uint64) Ranges {
	var out Ranges
	for _, r := range rs {
		if r.Last < from || r.First > to {
			continue
		}
		out = append(out, Range{max(r.First, from), min(r.Last, to)})
	}
	return out
}

// String lists the ranges, at most 8 of them, then how many more.
func (rs Ranges) String() string {
	var b strings.Builder
	for i, r := range rs {
		if i == 8 {
			fmt.Fprintf(&b, " and %d more ranges", len(rs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// Without is the part of the ranges that other does not cover.
func (rs Ranges) Without(other Ranges) Ranges {
	var out Ranges
	for _, r := range rs {
		for _, o := range other.Within(r.First, r.Last) {
			if o.First > r.First {
				out = append(out, Range{r.First, o.First - 1})
			}
			r.First = o.Last + 1
		}
		if r.First <= r.Last {
			out = append(out, r)
		}
	}
	return out
}

// rangesOf turns sorted, distinct sequences into ranges.
func rangesOf(seqs []uint64) Ranges {
	var out Ranges
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1].Last+1 == s {
			out[n-1].Last = s
			continue
		}
		out = append(out, Range{s, s})
	}
	return out
}

// StreamState is what a stream holds, as its server reports it.
type StreamState struct {
	Name              string
	Msgs              uint64
	FirstSeq, LastSeq uint64
	// Lost are the sequences between FirstSeq and LastSeq that hold no
	// message. bomstream never deletes a message of CHANGES or BOMS, so
	// there they are messages the store lost (a damaged block file); on
	// DLQ they are dead letters that were dealt with.
	Lost Ranges
	// Limited says the stream drops old messages (maxAge, maxBytes): a
	// FirstSeq above 1 is then no loss.
	Limited bool
}

// State reports what streamName holds, with the sequences it lacks.
func (r Reader) State(ctx context.Context, streamName string) (StreamState, error) {
	b := r.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return StreamState{}, err
	}
	var info *jetstream.StreamInfo
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx, jetstream.WithDeletedDetails(true))
		return err
	})
	if err != nil {
		return StreamState{}, fmt.Errorf("stream %s: %w", streamName, err)
	}
	st := info.State
	out := StreamState{Name: streamName, Msgs: st.Msgs, FirstSeq: st.FirstSeq, LastSeq: st.LastSeq,
		Limited: info.Config.MaxAge > 0 || info.Config.MaxBytes > 0 || info.Config.MaxMsgs > 0}
	if st.NumDeleted == 0 || st.Msgs == 0 && st.LastSeq == 0 {
		return out, nil // an empty stream reports a deleted sequence 0
	}
	seqs := make([]uint64, 0, len(st.Deleted))
	for _, d := range st.Deleted {
		if d >= st.FirstSeq && d <= st.LastSeq {
			seqs = append(seqs, d)
		}
	}
	slices.Sort(seqs)
	out.Lost = rangesOf(slices.Compact(seqs))
	return out, nil
}

// LastStored is the sequence of the last message of streamName matching
// filter that the store holds, 0 when none does. The stream's LastSeq is
// not it: the store may have lost its tail. The stream's leader answers,
// not a direct get: a replica that restarts answers direct gets from what
// it held before it caught up, and a read that ended there would stop
// short of what the stream holds.
func (r Reader) LastStored(ctx context.Context, streamName, filter string) (uint64, error) {
	b := r.b
	req, err := json.Marshal(map[string]string{"last_by_subj": filter})
	if err != nil {
		return 0, err
	}
	m, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+streamName, req)
	if err != nil {
		return 0, fmt.Errorf("last message of %s %s: %w", streamName, filter, err)
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return 0, fmt.Errorf("last message of %s %s: %w", streamName, filter, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, nil
	case resp.Error != nil:
		return 0, fmt.Errorf("last message of %s %s: %w", streamName, filter, resp.Error)
	case resp.Message == nil:
		return 0, fmt.Errorf("last message of %s %s: an answer with no message", streamName, filter)
	}
	return resp.Message.Seq, nil
}

// WarnLost logs, once per read, that a read of streamName from from to to
// skips the messages the store lost there. Only CHANGES and BOMS are
// looked at: elsewhere deleted messages are no loss.
func (r Reader) WarnLost(ctx context.Context, streamName string, from, to uint64, what string) {
	b := r.b
	if streamName != schemas.StreamChanges && streamName != schemas.StreamBOMs {
		return
	}
	st, err := r.State(ctx, streamName)
	if err != nil {
		b.log.Debug("lost messages", zap.String("stream", streamName), zap.Error(err))
		return
	}
	lost := st.Lost.Within(max(from, 1), to)
	if len(lost) == 0 {
		return
	}
	settled, err := r.settled(ctx, streamName)
	if err != nil {
		b.log.Debug("lost messages", zap.String("stream", streamName), zap.Error(err))
	}
	if lost = lost.Without(settled); len(lost) == 0 {
		return // checked: everything they held is back, elsewhere in the stream
	}
	b.log.Warn(fmt.Sprintf("%s has lost messages: %s skipped sequences %s (%d messages); `bomstream check` names the workloads affected and `bomstream check --repair` rebuilds what CHANGES can",
		streamName, what, lost, lost.Len()))
}

// settledBucket keeps, per stream, the lost ranges a check found nothing
// missing in (Settle).
const settledBucket = "bomstream-check"

// Settle records that a check found every derivable message the lost
// ranges of streamName held back on the stream: reads stop warning about
// them. What they were cannot be read again; what mattered is elsewhere.
func (r Reader) Settle(ctx context.Context, streamName string, lost Ranges) error {
	b := r.b
	kv, err := b.KeyValue(ctx, settledBucket)
	if err != nil {
		return fmt.Errorf("settle lost messages of %s: %w", streamName, err)
	}
	v, err := json.Marshal(lost)
	if err != nil {
		return fmt.Errorf("settle lost messages of %s: %w", streamName, err)
	}
	err = b.retry(ctx, "", true, func(ctx context.Context) error {
		_, err := kv.Put(ctx, streamName, v)
		return err
	})
	if err != nil {
		return fmt.Errorf("settle lost messages of %s: %w", streamName, err)
	}
	return nil
}

// settled is what Settle recorded for streamName.
func (r Reader) settled(ctx context.Context, streamName string) (Ranges, error) {
	b := r.b
	var e jetstream.KeyValueEntry
	err := b.retry(ctx, "", true, func(ctx context.Context) error {
		kv, err := b.js.KeyValue(ctx, settledBucket)
		if err != nil {
			return err
		}
		e, err = kv.Get(ctx, streamName)
		return err
	})
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs Ranges
	if err := json.Unmarshal(e.Value(), &rs); err != nil {
		return nil, err
	}
	return rs, nil
}
