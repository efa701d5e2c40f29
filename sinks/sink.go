package sinks

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

// BOM is one document to export, as read from a BOMS message.
type BOM struct {
	Workload  schemas.Workload
	BomHash   string // "sha256:<hex>" of Body
	InputHash string
	// ChangeSeq is the CHANGES stream sequence of the change this BOM was
	// rendered from. CHANGES is one stream, so change sequences order the
	// history of every workload, and of a name that was deleted and re-created.
	ChangeSeq uint64
	StreamSeq uint64    // sequence of the message on BOMS
	Time      time.Time // when the message was stored on BOMS
	Body      []byte    // CycloneDX 1.6 JSON
}

// Tombstone says that a workload is gone.
type Tombstone struct {
	Workload  schemas.Workload
	ChangeSeq uint64
	StreamSeq uint64
	Time      time.Time
}

// Sink writes BOMs to one store.
//
// Implementations only write and classify errors; the runner owns retries,
// dedupe, acks and the dead-letter path.
type Sink interface {
	// Name identifies this sink instance in config, metrics, logs, its
	// durable consumer and its ledger. It matches ValidateName.
	Name() string

	// Export writes one BOM. It must be idempotent: exporting the same BomHash
	// again changes nothing and returns nil. It blocks until the BOM is
	// durable in the store or ctx is done; when ctx is done it returns an
	// error wrapping ctx.Err() and leaves no partial state that a later
	// Export would not repair. It is safe for concurrent use with different
	// BOMs. Errors are transient (worth a retry) unless wrapped by Permanent.
	Export(ctx context.Context, bom BOM) error

	// Tombstone records that the workload is gone. It is idempotent, blocks
	// like Export, and classifies errors the same way. A tombstone whose
	// ChangeSeq is older than the latest BOM the sink holds for the same
	// name may be ignored.
	Tombstone(ctx context.Context, t Tombstone) error

	// Close releases the sink's resources. Export and Tombstone must not be
	// called after Close.
	Close() error
}

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: the runner sends the message to
// the dead-letter stream at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$`)

// ValidateName checks a sink name. Names become part of a consumer name, a KV
// bucket name and a subject token, so they are 1-64 characters of
// [a-zA-Z0-9_-], starting with a letter or digit.
func ValidateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("sink name %q: want 1-64 characters of [a-zA-Z0-9_-] starting with a letter or digit", name)
	}
	return nil
}
