// Package ledger is the sinks' ledgers: one KV bucket per sink,
// "bomstream-ledger-<sink>", that says what the sink has applied.
//
// [Open] opens a sink's [Ledger] over a [stream.Bus], creating its bucket
// when missing. [Ledger.Put] is a conditional write: it names the revision
// the caller read, and fails with [ErrConflict] when another process wrote
// the entry since. [Ledger.All] loads every entry when a sink starts.
// [Names] lists the sinks that have a ledger, configured now or not.
//
// A ledger has no age or size limit: one that forgot would let a replay
// write twice. The sink runner (package sinks/runner) decides what an
// entry holds; this package only keeps it.
package ledger
