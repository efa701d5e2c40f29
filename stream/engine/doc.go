// Package engine is the consume engine every stage runs on: the
// transformer on CHANGES, each sink on BOMS. A stage gives it a Handler; the
// engine owns the rest.
//
//	Run      creates or joins the stage's durable consumer (explicit ack,
//	         pinned to one client at a time, so that two replicas never hold
//	         one workload's messages at once) and pulls messages into a
//	         bounded set (MaxInFlight), queued per subject: one workload's
//	         messages are handled one at a time, in stream order, while other
//	         workloads go to whichever of Concurrency calls is free.
//	handle   calls the handler with an attempt timeout and panic recovery;
//	         a transient error is retried in process with backoff and full
//	         jitter (the workload's later messages wait behind it, and the
//	         stage reports itself degraded while it keeps failing), while the
//	         message's ack deadline is kept alive; a Permanent error, a
//	         panic, MaxAttempts reached, or a poison message (delivered more
//	         than MaxDeliver times) is dead-lettered on DLQ with its reason
//	         and terminated. Success acks.
//	claim    after a crash, rewinds the consumer to its ack floor so that
//	         what the dead process held comes again first, in order; the crash
//	         journal (KV bucket bomstream-journal) counts how often work on a
//	         message began, so that one that keeps crashing the process is
//	         dead-lettered instead of crashing it for ever.
//	Replay   drives the same handler over a range of the stream through an
//	         ordered consumer, acknowledging nothing, for backfills.
//	Redrive  puts one dead letter back through the handler, in order with
//	         the live messages of its subject (see subjectLocks), with the
//	         same timeout, retries, recovery and metrics; a failure makes it
//	         a dead letter again with the new reason.
//
// Every request the engine makes of the server besides the pull itself (the
// consumer's lookup, creation, unpinning, rewind, the crash journal, a
// replay's setup) goes through stream.Bus.Retry, and so rides through a
// leader election of the stream or the consumer; the pull recovers by
// itself, and an ack lost in an election makes the message come again
// after AckWait, which the stages' dedupe absorbs.
//
// Health and Counts report the stage's state and what it did; the metrics
// are the bomstream_stage_* families, one label per stage.
package engine
