// Package stream is bomstream's transport: the JetStream connection, the
// streams it provisions, the bounded retry every request rides through,
// and raw access to what the streams store. It does no domain work: the
// stores built over it decide what to write.
//
// [Open] either starts an embedded nats-server or connects to an external
// NATS URL. The embedded one keeps a file store in a data directory and
// listens on no port unless asked. Everything after the connection is
// the same code path. [Attach] is for commands that read through the
// process that owns the data directory (package owner). Credentials never
// reach a log line or an error: [Config.String] masks them. A refused
// credential fails with [ErrCredentialsRefused], naming the setting.
//
// [Bus.Provision] creates, idempotently, the four streams:
//
//	CHANGES   bomstream.changes.<cluster>.<uid>     WorkloadChange events
//	BOMS      bomstream.boms.<cluster>.<uid>        CycloneDX documents
//	DLQ       bomstream.dlq.<stage>                 what could not be processed, with the reason
//	FINDINGS  bomstream.findingset.<cluster>.<uid>  each workload's policy findings
//	          (and bomstream.findings.>, the layout before finding sets)
//
// [Bus.KeyValue] opens the KV buckets, and [Bus.Buckets] lists them.
//
// The bus hands out three small views. A [Writer] publishes: with a
// Nats-Msg-Id, so that a retry is stored once ([Writer.Publish]); on the
// condition of a subject's last sequence ([Writer.PublishAfter]); or
// without waiting for the ack ([Writer.PublishAsync]). A [Reader] reads:
// a subject's history up to where the stream ended when it was called
// ([Reader.Messages]), the last message per subject, one message, and a
// stream's [StreamState]. A store can lose messages (a damaged block
// file). State names the sequences it lacks, and reads step over them with
// a warning. [Durables] administers the durable consumers of the stages.
//
// On a NATS cluster every request rides through a stream leader election
// or a reconnect. The bus retries what the cluster heals by itself, for at
// most [Config.RetryFor], and a timeout only where a repeat is harmless. A
// publish the server refused by permission fails at once with
// [ErrPublishDenied]. [Bus.Retry] lends the same retry to the packages
// that hold a stream or consumer handle.
//
// The stores over the bus each take a small package:
// [github.com/bomstream/bomstream/stream/changelog] keeps each workload's
// history on CHANGES and the name index,
// [github.com/bomstream/bomstream/stream/bomlog] the BOMs on BOMS,
// [github.com/bomstream/bomstream/stream/deadletter] the DLQ, and
// [github.com/bomstream/bomstream/stream/ledger] the sinks' ledgers.
//
// In the fleet shape (docs/fleet.md) an edge's embedded server runs under
// its own JetStream domain, with a leaf-node link to the hub. The hub's
// CHANGES and name index ([NameIndexBucket]) source every edge's, each
// only its own cluster's subjects.
//
// Other subpackages: engine is the consume engine every stage runs on;
// owner is the data directory's owner (its lock, control requests, and
// the retention of CHANGES); check holds the streams, consumers and
// ledgers against each other. For tests, streamtest runs a real
// nats-server process, clustertest runs clusters and hubs in process, and
// bustest gives the stages' tests a bus.
package stream
