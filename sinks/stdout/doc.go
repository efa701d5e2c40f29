// Package stdout is the sink that prints each BOM as one compact JSON line,
// for debugging and for piping into other tools (jq, a log shipper).
//
// A BOM line is
//
//	{"type":"bom","workload":{...},"bomHash":"sha256:...","inputHash":"sha256:...","changeSeq":N,"streamSeq":N,"time":"...","bom":{...CycloneDX...}}
//
// and a tombstone line is
//
//	{"type":"tombstone","workload":{...},"changeSeq":N,"streamSeq":N,"time":"..."}
//
// Lines are written whole under a lock, so concurrent exports never
// interleave. Idempotence is per workload: the sink remembers the last
// bomHash and the last tombstone it printed for each workload (memory grows
// with the number of workloads, not with history), so a redelivered export
// or tombstone prints nothing. A write that blocks (a full pipe) cannot be
// interrupted by the context.
package stdout
