package sinks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

// BOM is one document to export, as read from a BOMS message.
type BOM struct {
	Workload  schemas.Workload
	BomHash   string // "sha256:<hex>" of Body: the name of the content
	InputHash string
	// ChangeSeq is the CHANGES stream sequence of the change this BOM was
	// rendered from: with the workload it is the version's identity
	// (docs/ARCHITECTURE.md, Words). CHANGES is one stream, so change
	// sequences order the history of every workload, and of a name that was
	// deleted and re-created.
	ChangeSeq uint64
	StreamSeq uint64    // sequence of the message on BOMS
	Time      time.Time // when the change was observed (the event's time)
	// Images are the container images of the BOM whose manifest digest was
	// resolved from running pods (for referrers in an OCI registry).
	Images []schemas.ImageDigest
	Body   []byte // CycloneDX 1.6 JSON
}

// Check verifies that b is what its name says before a sink stores it: a
// well-formed BomHash, the SHA-256 of Body, and a Body that is JSON. Its
// error is permanent: the same bytes never pass.
func (b BOM) Check() error {
	if !schemas.ValidBomHash(b.BomHash) {
		return Permanent(fmt.Errorf("export %s: bom hash %q is not sha256:<hex>", b.Workload, b.BomHash))
	}
	sum := sha256.Sum256(b.Body)
	if hex.EncodeToString(sum[:]) != b.BomHash[len("sha256:"):] {
		return Permanent(fmt.Errorf("export %s: body does not match bom hash %s", b.Workload, b.BomHash))
	}
	if !json.Valid(b.Body) {
		return Permanent(fmt.Errorf("export %s: body is not JSON", b.Workload))
	}
	return nil
}

// Tombstone reasons.
const (
	// ReasonDeleted: the workload was deleted.
	ReasonDeleted = schemas.TombstoneDeleted
	// ReasonNotServing: the workload still exists but serves no model any
	// more (its new inputs render no BOM), so its AI-BOM must not stay current.
	ReasonNotServing = schemas.TombstoneNotServing
)

// Tombstone says that a workload's last AI-BOM is no longer current.
type Tombstone struct {
	Workload  schemas.Workload
	Reason    string // ReasonDeleted or ReasonNotServing
	ChangeSeq uint64
	StreamSeq uint64
	Time      time.Time
}

// Sink writes BOMs to one store.
//
// Implementations only write and classify errors; the runner owns ordering,
// retries, dedupe, acks and the dead-letter path. The runner calls Export and
// Tombstone for one workload at a time, in change order, and never again for
// a version its ledger records as applied; it calls them concurrently for
// different workloads.
type Sink interface {
	// Name identifies this sink instance in config, metrics, logs, its
	// durable consumer and its ledger. It matches ValidateName.
	Name() string

	// Export writes one BOM. It must be idempotent: exporting the same BomHash
	// again changes nothing and returns nil. It blocks until the BOM is
	// durable in the store or ctx is done; when ctx is done it returns an
	// error wrapping ctx.Err() and leaves no partial state that a later
	// Export would not repair. It is safe for concurrent use with different
	// workloads. Errors are transient (worth a retry) unless wrapped by
	// Permanent; an error text must not carry a credential (the runner
	// scrubs it again before it is logged or dead-lettered).
	Export(ctx context.Context, bom BOM) error

	// Tombstone records that the workload's last BOM is no longer current
	// (t.Reason says why). It is idempotent, blocks like Export, and
	// classifies errors the same way. A tombstone whose ChangeSeq is older
	// than the latest BOM the sink holds for the same name may be ignored,
	// and so may one of a workload the sink never exported.
	Tombstone(ctx context.Context, t Tombstone) error

	// Close releases the sink's resources. Export and Tombstone must not be
	// called after Close.
	Close() error
}

// Checker is implemented by sinks that can check, before and while they
// run, that their store is reachable and that they hold the permissions they
// need (a bucket exists and is writable, an API key may create projects, a
// registry answers). Check must not write a BOM; it returns one Check per
// thing it looked at, failed ones with the cause and what to fix.
type Checker interface {
	Check(ctx context.Context) []Check
}

// Check is the outcome of one preflight check.
type Check struct {
	Name string // what was checked, e.g. "bucket exists"
	Err  error  // nil when it passed
}

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent tells the consume engine (stream.IsPermanent) not to retry.
func (e *permanentError) Permanent() bool { return true }

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
