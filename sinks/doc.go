// Package sinks is the last stage of bomstream: it exports the BOMs on the BOMS
// stream to the stores people already use.
//
// Each sink reads BOMS through its own durable consumer, "sink-<name>". The
// runner in [github.com/bomstream/bomstream/sinks/runner] reads each message
// into a [BOM] or a [Tombstone]. A tombstone says that a workload's last BOM is
// no longer current. The runner skips a version that the sink's ledger records
// as applied already. Only a failure between the store's write and the
// ledger's, or a replay that ignores the ledger, passes one again. A BOM that
// fails [BOM.Check] is dead-lettered before any sink sees it. Otherwise the
// runner calls [Sink.Export] or [Sink.Tombstone].
//
// A [Sink] is deliberately small. It writes one BOM or records one tombstone,
// and it marks errors that are not worth a retry with [Permanent]. The runner
// owns everything else: order, retries with backoff, acks and the dead-letter
// path. Errors not marked are retried; a permanent one, or retries running out,
// sends the message to the dead-letter subject. The runner calls a sink one at
// a time per workload name, and concurrently for different names. Order is told
// in the values: a BOM with Superseded set, or a tombstone with Stale set, is
// older than a version already applied for its name. A latest-only sink type
// ([Type.LatestOnly]) is never passed a superseded BOM. The comment on [Sink]
// states the whole contract.
//
// What is left to a sink is what its store needs. It writes idempotently, so
// the same version again changes nothing. It leaves no partial state that a
// retry would not repair, and it keeps no version bookkeeping of its own.
//
// The built-in sinks each have a package:
//
//   - sinks/file writes a directory tree with one file per BOM, named by its
//     hash.
//   - sinks/stdout prints one JSON line per BOM or tombstone.
//   - sinks/gcs keeps a Google Cloud Storage folder per workload.
//   - sinks/dtrack keeps a Dependency-Track project per workload, latest only.
//   - sinks/oci attaches each BOM to its images as an OCI 1.1 referrer.
//
// [github.com/bomstream/bomstream/sinks/registry] maps their type names to
// their [Type] values, and [DecodeConfig] reads a sink's configuration
// strictly. Every sink passes the conformance suite
// [github.com/bomstream/bomstream/sinks/sinktest.Run].
//
// Two interfaces are optional. A [Checker] looks at its store before BOMs
// arrive, and the runner runs it at start until it passes. A [Locator] names,
// without I/O, where the store holds a version of a workload's BOM.
//
// Decorators wrap the same interface. [WithSpecVersion] converts bodies to
// another CycloneDX version, and [DryRun] logs what would be written instead of
// writing it. [RegisterMetric] lets sinks share metric families without linking
// the stream layer.
package sinks
