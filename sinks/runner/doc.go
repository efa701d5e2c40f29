// Package runner drives one sink from the BOMS stream. The consume engine
// (stream.Engine) owns the consumer, acks, order, retries, the attempt
// timeout, panic recovery and the dead-letter path; the runner adds what is
// particular to sinks: reading the message, the sink's ledger, the
// latest-only skip and the sink's metrics.
//
// Each message of the sink's durable consumer ("sink-<name>", stage
// "sink.<name>") goes through Runner's handler, one workload at a time and
// in BOMS order:
//
//  1. Read it with schemas.DecodeBOMMessage. A message that does not read is
//     a permanent error: "bad message: ...", dead-lettered with that reason.
//  2. Look the workload up in the sink's ledger (the KV bucket of
//     stream.Bus.Ledger, key "w.<cluster>.<uid>", see ledgerKey), which
//     holds the last version the sink applied: its change sequence, BOM hash
//     or tombstone reason, and where on BOMS it was read. A version that is
//     not newer is skipped as a duplicate, whatever the delivery order.
//  3. A latest-only sink (Dependency-Track) also skips, as superseded, a
//     version when BOMS already holds a newer one of the workload.
//  4. Call the sink's Export or Tombstone. The engine retries a transient
//     error in process, in order (the workload's later messages wait), and
//     dead-letters a permanent one, a panic, or the last of MaxAttempts.
//  5. Record the version in the ledger with a conditional put, then return:
//     the engine acks. A crash in between redelivers the message, and the
//     sink's idempotent Export absorbs it; a put that loses a race to another
//     process reads the entry again and keeps whichever version is newer.
//
// Replay runs the same handler over a range of BOMS through an ordered
// consumer, so nothing already exported is written twice; a sink under a
// new name backfills from scratch. Retry redrives one dead letter through
// the engine (stream.Engine.Redrive). ReadLedger gives `bomstream check`
// the ledger to hold against BOMS.
package runner
