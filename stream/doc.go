// Package stream is bomstream's JetStream backbone.
//
// Open either starts an embedded nats-server (JetStream on, file store in a
// data directory, reached through an in-process connection and listening on no
// port unless asked) or connects to an external NATS URL with credentials and
// TLS; everything after the connection is the same code path. It then
// provisions, idempotently, the three streams of docs/ARCHITECTURE.md:
//
//	CHANGES  bomstream.changes.<cluster>.<uid>  WorkloadChange events
//	BOMS     bomstream.boms.<cluster>.<uid>     CycloneDX documents
//	DLQ      bomstream.dlq.<stage>              what could not be processed, with the reason
//
// and hands out the per-sink KV ledgers. Stages use the Bus; they never start
// servers or create streams themselves.
package stream
