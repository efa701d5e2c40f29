package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// ErrStop, returned by the callback of Messages, ends the iteration early
// without an error.
var ErrStop = errors.New("stop iteration")

// Messages calls fn, in stream order, for every stored message of streamName
// whose subject matches subject (a filter with wildcards; "" means all) and
// whose sequence is at least fromSeq (0 or 1 means from the start). It stops
// at the last matching message stored when the call began, so it always
// returns, even while writers keep appending. It reads through an ordered
// consumer: nothing is acked and no durable state is left on the server.
//
// An error from fn ends the iteration and is returned; ErrStop ends it with nil.
func (r Reader) Messages(ctx context.Context, streamName, subject string, fromSeq uint64, fn func(*jetstream.RawStreamMsg) error) error {
	return r.messages(ctx, streamName, subject, fromSeq, false, fn)
}

// Headers is Messages without the bodies: fn sees each message's subject,
// sequence, time and headers, and no Data. It does not warn about lost
// messages: its caller (the store check) reports them.
func (r Reader) Headers(ctx context.Context, streamName, subject string, fromSeq uint64, fn func(*jetstream.RawStreamMsg) error) error {
	return r.messages(ctx, streamName, subject, fromSeq, true, fn)
}

func (r Reader) messages(ctx context.Context, streamName, subject string, fromSeq uint64, headersOnly bool, fn func(*jetstream.RawStreamMsg) error) error {
	b := r.b
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return fmt.Errorf("messages of %s: %w", streamName, err)
	}
	filters := []string{subject}
	if subject == "" {
		// Not ">": the server answers "not found" to the last message of
		// ">" when the stream's last sequence is one it lost.
		filters = allOf(streamName)
	}
	filter := strings.Join(filters, ",")
	end, err := r.lastStoredOf(ctx, streamName, filters)
	if err != nil {
		return fmt.Errorf("messages of %s: %w", streamName, err)
	}
	if end == 0 || fromSeq > end {
		return nil
	}
	if !headersOnly {
		r.WarnLost(ctx, streamName, fromSeq, end, "the read of "+filter)
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: filters, HeadersOnly: headersOnly}
	if fromSeq > 1 {
		occ.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		occ.OptStartSeq = fromSeq
	}
	// The ordered consumer, once made, rides through an election by itself
	// (it is made again where the last message it delivered left off).
	var cons jetstream.Consumer
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		cons, err = s.OrderedConsumer(ctx, occ)
		return err
	})
	if err != nil {
		return fmt.Errorf("messages of %s %s: %w", streamName, filter, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("messages of %s %s: %w", streamName, filter, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("messages of %s %s: %w", streamName, filter, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("messages of %s %s: %w", streamName, filter, err)
		}
		seq := md.Sequence.Stream
		if seq > end {
			return nil
		}
		err = fn(&jetstream.RawStreamMsg{
			Subject:  msg.Subject(),
			Sequence: seq,
			Header:   msg.Headers(),
			Data:     msg.Data(),
			Time:     md.Timestamp,
		})
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
		// NumPending 0: the last matching message is gone (aged out) or this was it.
		if seq == end || md.NumPending == 0 {
			return nil
		}
	}
}

// lastStoredOf is the last sequence stored on a subject of filters.
func (r Reader) lastStoredOf(ctx context.Context, streamName string, filters []string) (uint64, error) {
	b := r.b
	var end uint64
	for _, f := range filters {
		var last uint64
		err := b.retry(ctx, "", true, func(ctx context.Context) (err error) {
			last, err = r.LastStored(ctx, streamName, f)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		end = max(end, last)
	}
	return end, nil
}

// allOf is the filters of every subject of a bomstream stream.
func allOf(streamName string) []string {
	switch streamName {
	case schemas.StreamChanges:
		return []string{schemas.SubjectChangesPrefix + ">"}
	case schemas.StreamBOMs:
		return []string{schemas.SubjectBOMsPrefix + ">"}
	case schemas.StreamDLQ:
		return []string{schemas.SubjectDLQPrefix + ">"}
	case schemas.StreamFindings:
		return []string{schemas.SubjectFindingsPrefix + ">", schemas.SubjectFindingSetPrefix + ">"}
	}
	return []string{">"}
}
