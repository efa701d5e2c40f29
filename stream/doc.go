// Package stream is bomstream's JetStream backbone.
//
// Open either starts an embedded nats-server (JetStream on, file store in a
// data directory, reached through an in-process connection and listening on no
// port unless asked) or connects to an external NATS URL with credentials and
// TLS; everything after the connection is the same code path. Credentials
// never reach a log line or an error: Config.String masks them, errors name
// the setting and file, and a URL's userinfo is redacted. In operator mode
// a .creds file (a user JWT and its seed) is checked at Open (creds.go),
// and credentials the server refuses, at connect or later (an expired or
// revoked user), fail with ErrCredentialsRefused. It then provisions,
// idempotently, the four streams:
//
//	CHANGES   bomstream.changes.<cluster>.<uid>     WorkloadChange events
//	BOMS      bomstream.boms.<cluster>.<uid>        CycloneDX documents
//	DLQ       bomstream.dlq.<stage>                 what could not be processed, with the reason
//	FINDINGS  bomstream.findingset.<cluster>.<uid>  each workload's policy findings
//	          (and bomstream.findings.>, the layout before finding sets)
//
// and hands out the KV buckets: the per-sink ledgers, the name index. Stages
// use the Bus; they never start servers or create streams themselves.
//
// One process owns an embedded data directory (package owner: a lock file,
// and owner.json saying how to reach its server). Open claims it; Attach lets
// a second command read through the owner's server instead, and Control
// carries the requests (a replay, a dead-letter retry) that must run in the
// owner.
//
// Writing: PublishChange appends a workload's event to CHANGES with optimistic
// concurrency (Nats-Msg-Id "<cluster>:<uid>:<n>" and
// Nats-Expected-Last-Subject-Sequence n, n being the subject's last sequence
// it read), so retries are dropped, writers never interleave one workload's
// history, and an unchanged state is not written twice. DeadLetter parks a
// failed message on DLQ with its headers, its origin and the reason.
//
// Reading: LastChange is a workload's latest state; Messages walks the stored
// history of a subject filter up to where the stream ended when it was
// called, for history, point-in-time and replay commands. A store can lose
// messages (a damaged block file): State names the sequences CHANGES or BOMS
// lack, and Messages and engine.Engine.Replay step over them with a warning that
// names them, ending at the last message stored rather than at the server's
// pending counts, which such a store can get wrong.
//
// On a NATS cluster every request rides through a stream leader election
// or a reconnect: retry.go retries what the cluster heals by itself (a
// timeout only where a repeat is harmless: a publish with a Nats-Msg-Id, a
// read, a conditional write) for at most Config.RetryFor, and fails a
// publish the server refused by permission at once with ErrPublishDenied.
// Bus.Retry hands the same retry to the packages that hold a stream or
// consumer handle (the consume engine, the findings stage, retention).
// In the fleet shape (edge.go, docs/fleet.md) an edge's embedded server runs
// under its own JetStream domain with a leaf-node link to the hub, and the
// hub's CHANGES and name index source every edge's, each only its own
// cluster's subjects.
//
// Subpackages: engine is the consume engine every stage runs on (ordering
// per workload, retries, dead letters, crash recovery, replay, redrive);
// owner is the data directory's owner (its lock and advertisement, control
// requests, and the retention that trims CHANGES without ever removing a
// workload's last event); check holds the streams, consumers and ledgers
// against each other; streamtest runs a real nats-server process for tests
// of the external, TCP path, or a cluster of such processes; clustertest
// runs JetStream clusters, hubs
// with leaf-node listeners and cuttable links in process; and bustest
// gives the stages' tests a bus and a deadline-bound wait.
package stream
