// Package sinks is the last stage of bomstream: it exports BOMs from the BOMS
// stream to the stores people already use.
//
// Data flows like this:
//
//	[BOMS stream] ──durable consumer "sink-<name>"──▶ runner ──Export/Tombstone──▶ Sink ──▶ store
//	                                                    │
//	                                                    ├─ ledger (KV "bomstream-ledger-<name>"): bomHash already exported? skip
//	                                                    ├─ transient error: retry with backoff and jitter
//	                                                    └─ permanent error or retries exhausted: DLQ "bomstream.dlq.sink.<name>"
//
// A Sink (this package) is deliberately small: it writes one BOM or records one
// tombstone, idempotently, and classifies its errors with Permanent. Everything
// else — acks, dedupe, retries, the dead-letter path, the latest-only skip of
// superseded versions, metrics — lives once, in package sinks/runner. The
// built-in sinks are sinks/file and sinks/stdout; sinks/registry maps their
// type names to constructors, and sinks/sinktest is the conformance suite
// every sink passes.
//
// Decorators wrap the same interface: DryRun logs what would be written
// instead of writing it.
package sinks
