// Package inventory answers questions across the fleet: which workloads
// serve a model, run vLLM older than 0.8.5, run an image digest, serve a
// model without a pinned revision, changed since Monday.
//
// An Index is built from the BOMS stream, the same messages the sinks
// export, read only through their codec (schemas.DecodeBOMMessage). Load
// reads every message stored after the last one the index holds, in
// stream order, and decodes them in parallel batches: the codec reads the
// headers (identity, change sequence, event time, tombstone), ReadFacts
// reads the few fields of the CycloneDX body the index keeps, skipping
// the evidence and dependencies, and each batch is then applied in order.
// A running process keeps it current with a [follow.Follower], which
// applies each message as an ordered consumer pushes it ([Index.Apply]).
//
// Per workload (cluster and uid) the index keeps its whole history of
// versions, in change order, each with its facts: runtimes (name, version
// as rendered, confidence), models (id, revisions, unpinned, confidence),
// images (reference, resolved digests, confidence), and its serving state
// (a BOM is serving; a tombstone says deleted or not-serving). First seen
// is the first version's observation time, last changed the version in
// effect's. Strings that repeat (names, versions, confidences, model ids,
// images) are shared, and each distinct runtime version is parsed once
// (package versions), so a query compares numbers, not strings.
//
// A Query is read from field names and values (ParseQuery), the same for
// `bomstream find` flags and the HTTP API's query parameters (package
// inventory/api), so both answer alike. Find walks the workloads in name
// order and takes, for each, the version in effect at the query's time
// (now, or --at: the last version observed at or before it, as `bomstream
// get --at` reads one). Query.Check is the place for a caller's own
// filter and annotations: policy findings use it.
//
// There is one version in effect at a time, [Workload.VersionAt]. The
// queries, the API and the pages take it from the index. `bomstream
// history` and `get` take it from [History], which reads one workload's
// versions as the index would hold them, without loading the stream.
package inventory
