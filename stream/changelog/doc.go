// Package changelog is the change log: every workload's history on the
// CHANGES stream, and the name index that finds a workload by its name.
//
// A [Log] is built over a [stream.Bus] with [New]. The bus carries the
// bytes; the log decides what to write. [Log.PublishChange] reads a
// workload's last event and appends the new one only when its state
// differs. The append names the sequence it read twice: in its
// Nats-Msg-Id, "<cluster>:<uid>:<n>", and in
// Nats-Expected-Last-Subject-Sequence n. A retried publish is then
// dropped, and two writers never interleave one workload's history.
// A writer that loses the race reads again and decides again.
//
// [Log.AppendChanges] does the same for many events without a round trip
// each. A source that read the cluster's state with [Log.LatestChanges]
// sends every conditional append at once and collects the acks after.
// An append whose expectation failed goes through PublishChange.
// [Log.AppendChangeAfter] appends even an unchanged state: a re-render
// repeats the last event on purpose.
//
// The path of a manifest change reads top to bottom: a collector source
// decides, the log encodes the event and its headers, and the bus's
// [stream.Writer] publishes it under one bounded retry.
//
// A workload's first event also enters the name index, the KV bucket
// [stream.NameIndexBucket]. Its keys are
// "<cluster>.<hex of namespace/kind/name>.<uid>", its values the time of
// that first event. [Log.WorkloadUIDs] and [Log.FindWorkload] read it, so
// that history and get read one workload rather than a cluster. On a hub
// the bucket sources every edge's, as CHANGES does.
//
// [Decode] is the one decoder of a CHANGES body that every reader shares.
package changelog
