// Package runner drives one sink from the BOMS stream. It owns everything a
// sink does not: the consumer, acks, dedupe, retries, the dead-letter path,
// the latest-only skip and metrics.
//
// For each message on the sink's durable consumer ("sink-<name>", explicit
// ack, from the first message of BOMS unless told otherwise):
//
//  1. Parse the headers (Bomstream-Bom-Hash, -Input-Hash, -Change-Seq,
//     -Workload; a tombstone carries Bomstream-Tombstone: true, -Change-Seq
//     and the workload as its body). A message that does not parse goes to
//     the DLQ as "bad message: ..." and is terminated.
//  2. Dedupe against the sink's ledger, the KV bucket "bomstream-ledger-<name>":
//     key "sha256.<hex>" for a BOM, "tombstone.<cluster>.<uid>.<changeSeq>"
//     for a tombstone. Present: ack and count a duplicate skip.
//  3. Latest-only sinks skip, as superseded, a message when BOMS already
//     holds a newer message on its subject, or when the ledger's
//     "latest.<cluster>.<uid>" records a newer change sequence already
//     exported for the workload.
//  4. Call Export or Tombstone. Transient errors are retried in process with
//     exponential backoff and full jitter, up to MaxAttempts calls, while the
//     message's ack deadline is kept alive with InProgress. Retrying in
//     process, rather than Nak with a delay, keeps a workload's messages in
//     order: its later messages wait behind the one being retried. A
//     Permanent error, a panic in the sink, or exhausted retries send the
//     message to the DLQ ("bomstream.dlq.sink.<name>", with the reason) and
//     terminate it; other workloads keep flowing.
//  5. After success: put the ledger key, THEN ack. A crash between the two
//     redelivers the message and the sink's idempotent Export absorbs it.
//     Except for latest-only sinks (whose next check reads what this step
//     writes), Run does this step off the worker, so that the workload's
//     next message can start; the message stays counted as in hand until
//     its ack.
//
// Concurrency is bounded by Config.Concurrency workers. One workload's
// messages (one subject) are handled serially and in stream order; messages
// of other workloads go to whichever worker is free, so a slow workload
// holds back only its own later messages. At most 2×Concurrency messages are
// queued or in hand. A successful export is logged at Debug level; retries,
// skips of bad messages and dead letters at Warn and Error. On cancellation Run stops fetching,
// lets every worker finish the message in hand (bounded by DrainTimeout),
// and hands queued messages back to the server with Nak.
//
// Replay re-drives a sink over a range of BOMS through an ephemeral ordered
// consumer with the same ledger and the same steps, so nothing already
// exported is written twice; a sink under a new name backfills from scratch.
package runner
