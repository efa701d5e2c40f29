// Package sinks is the last stage of bomstream: it exports BOMs from the BOMS
// stream to the stores people already use.
//
// Data flows like this:
//
//	[BOMS stream] ──durable consumer "sink-<name>"──▶ runner ──Export/Tombstone──▶ Sink ──▶ store
//	                                                    │
//	                                                    ├─ ledger (KV "bomstream-ledger-<name>"): version applied already? skip
//	                                                    ├─ BOM.Check fails: DLQ, the sink is not called
//	                                                    ├─ transient error: retry with backoff and jitter
//	                                                    └─ permanent error or retries exhausted: DLQ "bomstream.dlq.sink.<name>"
//
// # The contract
//
// A Sink (this package) is deliberately small: it writes one BOM or records
// one tombstone, idempotently, and classifies its errors with Permanent.
// Everything else lives once, in package sinks/runner, which guarantees
// each sink:
//
//   - one call at a time per workload name (cluster, namespace, kind,
//     name), calls for different names at once;
//   - BOMs that pass BOM.Check (the hash names the body, the body is JSON):
//     a BOM that fails is dead-lettered before any sink sees it;
//   - no version its ledger records as applied, except once more after a
//     failure between the store's write and the ledger's, and in a replay
//     that ignores the ledger;
//   - order told in the values: BOM.Superseded on a BOM, and Tombstone.Stale
//     on a tombstone, older than a version applied for the same name (a
//     workload deleted and re-created under its name whose old messages come
//     late, a replay that ignores the ledger). Unmarked, a call is newer than
//     everything applied for its name, and the sink may make it current;
//   - for latest-only sink types (Type.LatestOnly), no superseded BOM at all,
//     nor a version older than the last BOMS holds for its workload.
//
// What is left to a sink is what its store needs: idempotent writes (the
// same version again changes nothing), no partial state a retry would not
// repair (a crash, a canceled context, an outage), error classification,
// and honouring the two flags. It keeps no version bookkeeping of its own.
// A sink whose store is keyed by workload uid rather than name (a gcs
// folder template with {uid}, a dtrack template with .UID) does not read
// the flags, which are about names: a replay then moves its latest back and
// forth before it ends where it was.
//
// # The sinks
//
//   - sinks/file writes a directory tree: a file per BOM named by its hash,
//     latest.cdx.json a hard link to the current one, tombstone.json while
//     there is none; group-committed flushes of the file system.
//   - sinks/stdout prints one JSON line per BOM or tombstone, for debugging
//     and pipes; superseded BOMs are printed marked.
//   - sinks/gcs keeps a Google Cloud Storage folder per workload: an
//     immutable object per BOM (create-only), latest.cdx.json, tombstone.json.
//   - sinks/dtrack keeps a Dependency-Track project per workload (latest-only:
//     an upload replaces the project's components); a tombstone deactivates
//     or deletes it.
//   - sinks/oci attaches each BOM to the container images it describes, as
//     an OCI 1.1 referrer in their registries; referrers are history, so a
//     tombstone writes nothing.
//
// sinks/registry maps their type names to their Types (Registry, Decode:
// strict configuration, unknown keys named), and sinks/sinktest is the
// conformance suite every sink passes: the contract above, case by case,
// outages of its store and its Checker included. A sink that can look at
// its store before BOMs arrive implements Checker; the runner runs it at
// start and until it passes. A sink that can name, without I/O, where its
// store holds a version of a workload's BOM (a GCS object, a
// Dependency-Track project, an OCI referrer's subject, a file) implements
// Locator, with its own naming, so the answer cannot drift from what
// Export writes.
//
// Decorators wrap the same interface: WithSpecVersion converts bodies to
// another CycloneDX version (and passes Checker and Locator through),
// DryRun logs what would be written instead of writing it (and passes
// Locator through, noting that it writes nothing). RegisterMetric lets
// sinks share metric families without linking the stream layer.
package sinks
