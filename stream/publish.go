package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// PubAck is what a stream answered to a publish.
type PubAck struct {
	Seq       uint64 // the message's sequence on its stream
	Duplicate bool   // the stream already held a message with the same id
}

// Publish stores m on the bomstream stream its subject belongs to, with
// Nats-Msg-Id msgID (none when empty), and waits for the stream's ack. A
// retried publish with the same id within the duplicate window is stored
// once (Duplicate says so).
func (b *Bus) Publish(ctx context.Context, m *nats.Msg, msgID string) (PubAck, error) {
	name, err := streamOf(m.Subject)
	if err != nil {
		return PubAck{}, err
	}
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream(name)}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := b.publishMsg(ctx, m, msgID != "", opts)
	if err != nil {
		return PubAck{}, fmt.Errorf("publish to %s: %w", m.Subject, err)
	}
	return PubAck{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// publishMsg publishes m and waits for its ack, retrying through a leader
// election or a reconnect (see retry); repeatable says m carries a
// Nats-Msg-Id, so that a stored first attempt makes the retry a duplicate.
func (b *Bus) publishMsg(ctx context.Context, m *nats.Msg, repeatable bool, opts []jetstream.PublishOpt) (*jetstream.PubAck, error) {
	var ack *jetstream.PubAck
	err := b.retry(ctx, m.Subject, repeatable, func(ctx context.Context) (err error) {
		ack, err = b.js.PublishMsg(ctx, m, opts...)
		return err
	})
	return ack, err
}

// ErrWrongLastSeq is returned by PublishAfter when the subject's last
// sequence is no longer the one the writer saw: another writer appended
// first; read again and decide again.
var ErrWrongLastSeq = errors.New("the subject changed since it was read")

// PublishAfter is Publish with optimistic concurrency: m is stored only
// while its subject's last sequence is still lastSeq (0: the subject has
// no message), else the error wraps ErrWrongLastSeq. Being conditional,
// it is retried through an election or a timeout even without a msgID: a
// first attempt that was stored makes the retry fail with
// ErrWrongLastSeq, and the writer reads again.
func (b *Bus) PublishAfter(ctx context.Context, m *nats.Msg, msgID string, lastSeq uint64) (PubAck, error) {
	name, err := streamOf(m.Subject)
	if err != nil {
		return PubAck{}, err
	}
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream(name), jetstream.WithExpectLastSequencePerSubject(lastSeq)}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := b.publishMsg(ctx, m, true, opts)
	if isWrongLastSeq(err) {
		return PubAck{}, fmt.Errorf("publish to %s after seq %d: %w", m.Subject, lastSeq, ErrWrongLastSeq)
	}
	if err != nil {
		return PubAck{}, fmt.Errorf("publish to %s: %w", m.Subject, err)
	}
	return PubAck{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// streamOf names the stream that stores subject.
func streamOf(subject string) (string, error) {
	switch {
	case strings.HasPrefix(subject, schemas.SubjectChangesPrefix):
		return schemas.StreamChanges, nil
	case strings.HasPrefix(subject, schemas.SubjectBOMsPrefix):
		return schemas.StreamBOMs, nil
	case strings.HasPrefix(subject, schemas.SubjectDLQPrefix):
		return schemas.StreamDLQ, nil
	case strings.HasPrefix(subject, schemas.SubjectFindingsPrefix), strings.HasPrefix(subject, schemas.SubjectFindingSetPrefix):
		return schemas.StreamFindings, nil
	}
	return "", fmt.Errorf("publish to %s: not a bomstream subject", subject)
}

// LastMsg is the last stored message of subject on streamName, read with a
// direct get; nil (and no error) when the subject has none.
func (b *Bus) LastMsg(ctx context.Context, streamName, subject string) (*jetstream.RawStreamMsg, error) {
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	var m *jetstream.RawStreamMsg
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		m, err = s.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, nats.ErrNoResponders) && b.streamGone(ctx, streamName) {
			return fmt.Errorf("stream %s: %w", streamName, jetstream.ErrStreamNotFound)
		}
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last message of %s on %s: %w", subject, streamName, err)
	}
	return m, nil
}

// LastSeq is the last sequence stored on streamName (0 when empty).
func (b *Bus) LastSeq(ctx context.Context, streamName string) (uint64, error) {
	s, err := b.Stream(ctx, streamName)
	if err != nil {
		return 0, err
	}
	var info *jetstream.StreamInfo
	err = b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", streamName, err)
	}
	return info.State.LastSeq, nil
}
