package sinks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/engine"
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
	// Superseded says that the runner has applied a newer version of a
	// workload with this name (this one, or one re-created under its name)
	// before this one: a replay that ignores the ledger, or a late message
	// of a deleted workload. A sink that keeps history stores the BOM as
	// history, and one that presents a latest BOM per name leaves it alone.
	Superseded bool
}

// Check verifies that b is what its name says: a well-formed BomHash, the
// SHA-256 of Body, and a Body that is JSON. The runner calls it once per
// delivery, before Export, so a sink receives only BOMs that pass. Its
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
	// Stale says that the runner has applied a newer version of a workload
	// with this name (this one, or one re-created under its name) before
	// this tombstone: it retires nothing that is current, and a sink that
	// presents a latest BOM per name ignores it.
	Stale bool
}

// Sink writes BOMs to one store.
//
// The runner (package sinks/runner) owns everything but the store: order,
// retries, dedupe, acks and the dead-letter path. What it guarantees a sink:
//
//   - Calls about one workload name (cluster, namespace, kind, name) come one
//     at a time; calls about different names come concurrently.
//   - A BOM passed BOM.Check: its hash is well formed and names its body,
//     which is JSON. A BOM that fails is dead-lettered without a call.
//   - A version the runner's ledger records as applied is not passed again,
//     except after a failure between the store's write and the ledger's
//     (the same version, once more) and in a replay that ignores the ledger.
//   - Order is told, not implied: a BOM older than a version the runner
//     applied for the same name comes with Superseded set, and such a
//     tombstone with Stale set. Without them a call is newer than every
//     version of its name the runner applied, and the sink may make it
//     current. The flags are about names; a store keyed by workload uid
//     need not read them (versions of one workload come in order, but for
//     a replay that ignores the ledger).
//   - A latest-only runner (Type.LatestOnly) skips superseded BOMs instead
//     of passing them.
//
// What a sink still does: write idempotently (the same version again
// changes nothing the store presents), leave no partial state a retry would
// not repair (after a crash, a canceled context or an outage), classify its
// errors with Permanent, and keep what its store needs for that, nothing
// more: no version bookkeeping of its own.
type Sink interface {
	// Name identifies this sink instance in config, metrics, logs, its
	// durable consumer and its ledger. It matches ValidateName.
	Name() string

	// Export writes one BOM. It must be idempotent: exporting the same BomHash
	// again changes nothing and returns nil. A BOM with Superseded set
	// changes nothing the sink presents as the workload's latest. It blocks
	// until the BOM is durable in the store or ctx is done; when ctx is done
	// it returns an error wrapping ctx.Err() and leaves no partial state
	// that a later Export would not repair. It is safe for concurrent use
	// with different workloads. Errors are transient (worth a retry) unless
	// wrapped by Permanent; an error text must not carry a credential (the
	// runner scrubs it again before it is logged or dead-lettered).
	Export(ctx context.Context, bom BOM) error

	// Tombstone records that the workload's last BOM is no longer current
	// (t.Reason says why). It is idempotent, blocks like Export, and
	// classifies errors the same way. A tombstone with Stale set is ignored
	// by a sink that presents a latest BOM per name, and a tombstone of a
	// workload the sink never exported may be ignored.
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

// NewCheck is the check of what with its outcome, for checks that come
// from elsewhere in that shape, as a signer's does.
func NewCheck(what string, err error) Check { return Check{Name: what, Err: err} }

// Permanent marks err as not worth retrying: the runner sends the message to
// the dead-letter stream at once. Permanent(nil) is nil. It is
// [engine.Permanent], the one marker of the whole product: IsPermanent and
// [engine.IsPermanent] agree on every error, whichever package marked it.
func Permanent(err error) error { return engine.Permanent(err) }

// IsPermanent reports whether err, or any error it wraps, was marked by
// Permanent (or [engine.Permanent], the same marker).
func IsPermanent(err error) bool { return engine.IsPermanent(err) }

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
