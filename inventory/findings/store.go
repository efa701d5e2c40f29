package findings

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// MsgReader reads a stored message back by its stream sequence; nil
// when the stream no longer holds it (stream.Bus's GetMsg). A page of
// findings is read back through it (Selection.Events, Index.Page).
type MsgReader interface {
	GetMsg(ctx context.Context, streamName string, seq uint64) (*jetstream.RawStreamMsg, error)
}

// Store is what the readers read FINDINGS through: a *stream.Bus. Each
// method rides through a leader election, and is safe for concurrent
// use.
type Store interface {
	MsgReader
	// LastMsg is the last message of subject on streamName, nil when
	// there is none.
	LastMsg(ctx context.Context, streamName, subject string) (*jetstream.RawStreamMsg, error)
	// LastPerSubject calls fn with the last message of each subject
	// matching filter.
	LastPerSubject(ctx context.Context, streamName, filter string, headersOnly bool, fn func(*jetstream.RawStreamMsg) error) error
	// Stream is the stream called name, for its subject counts.
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	// Retry calls fn until it succeeds, riding through an election.
	Retry(ctx context.Context, repeatable bool, fn func(ctx context.Context) error) error
}
