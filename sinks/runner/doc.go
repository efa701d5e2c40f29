// Package runner drives one sink from the BOMS stream. The consume engine
// (engine.Engine) owns the consumer, acks, order, retries, the attempt
// timeout, panic recovery and the dead-letter path; the runner adds what is
// particular to sinks: reading the message, the sink's ledger, the
// latest-only skip and the sink's metrics.
//
// Each message of the sink's durable consumer ("sink-<name>", stage
// "sink.<name>") goes through Runner's handler, one workload at a time and
// in BOMS order, and, under a lock by workload name, one name at a time:
//
//  1. Read it with schemas.DecodeBOMMessage. A message that does not read is
//     a permanent error: "bad message: ...", dead-lettered with that reason.
//  2. Look the workload up in the sink's ledger (the KV bucket of
//     ledger.Open, key "w.<cluster>.<uid>", see ledgerKey), which
//     holds the last version the sink applied: its change sequence, BOM hash
//     or tombstone reason, where on BOMS it was read, and the workload's
//     name. A version that is not newer is skipped as a duplicate, whatever
//     the delivery order.
//  3. Look the name up in the ledger as this process holds it: the newest
//     change applied for any workload of that name. A version older than it
//     (a workload deleted and re-created under its name, whose messages come
//     late; a replay that ignores the ledger) is passed on marked:
//     sinks.BOM.Superseded, sinks.Tombstone.Stale.
//  4. A latest-only sink (Dependency-Track) skips, as superseded, a marked
//     BOM, and a version when BOMS already holds a newer one of the workload.
//  5. Check a BOM (sinks.BOM.Check: its hash names its body, which is JSON);
//     one that fails is a permanent error, dead-lettered without a call.
//  6. Call the sink's Export or Tombstone. The engine retries a transient
//     error in process, in order (the workload's later messages wait), and
//     dead-letters a permanent one, a panic, or the last of MaxAttempts.
//  7. Record the version in the ledger with a conditional put, then return:
//     the engine acks. A crash in between redelivers the message, and the
//     sink's idempotent Export absorbs it; a put that loses a race to another
//     process reads the entry again and keeps whichever version is newer.
//
// A sink therefore keeps no version bookkeeping of its own: see the
// contract of sinks.Sink.
//
// Replay runs the same handler over a range of BOMS through an ordered
// consumer, so nothing already exported is written twice; a sink under a
// new name backfills from scratch. Retry redrives one dead letter through
// the engine (engine.Engine.Redrive). ReadLedger gives `bomstream check`
// the ledger to hold against BOMS, and LedgerEntry one workload's entry:
// whether, and which version, a sink applied.
package runner
