// Package stdout is the sink that prints each BOM as one compact JSON line,
// for debugging and for piping into other tools (jq, a log shipper).
//
// A BOM line is
//
//	{"type":"bom","workload":{...},"bomHash":"sha256:...","inputHash":"sha256:...","changeSeq":N,"streamSeq":N,"time":"...","bom":{...CycloneDX...}}
//
// with "superseded":true when the runner applied a newer version of the
// name before (sinks.BOM.Superseded: history, not the latest), and a
// tombstone line is
//
//	{"type":"tombstone","workload":{...},"changeSeq":N,"streamSeq":N,"time":"..."}
//
// A stale tombstone (sinks.Tombstone.Stale) prints nothing. Lines are
// written whole under a lock, so concurrent exports never interleave. A
// stream cannot be read back, so idempotence is what the sink remembers:
// the last line it printed for each workload (memory grows with the number
// of workloads, not with history); a redelivered export or tombstone, which
// would print that line again, prints nothing. A write that blocks (a full
// pipe) cannot be interrupted by the context.
package stdout
