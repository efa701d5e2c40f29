// Package service is the transformer stage: the loop around the pure
// transformer.Render that turns the CHANGES stream into the BOMS stream.
//
// Every replica of the stage runs a Service on the same durable pull consumer
// of CHANGES (Config.Durable, explicit acks), so JetStream hands each change
// event to exactly one replica at a time and any number of replicas can share
// the load. For one message the flow is:
//
//	CHANGES msg ──parse──▶ WorkloadChange ──Render──▶ Result
//	   │                                                │
//	   │ malformed, incomplete identity, render panic   ├─ BOM     ─▶ publish to BOMS, then ack
//	   │ or render error at the last delivery           ├─ Skipped ─▶ ack (nothing to export)
//	   ▼                                                └─ error   ─▶ Nak with backoff (redelivered)
//	 DLQ bomstream.dlq.<stage>, then Term
//	                              tombstone event ─▶ tombstone message on BOMS, then ack
//
// A BOM message is published to schemas.BOMsSubject(workload) with
// Nats-Msg-Id = bomHash, so a redelivered or re-rendered event whose bytes did
// not change is dropped by the stream's dedupe window, and with the headers
// Bomstream-Bom-Hash, Bomstream-Input-Hash, Bomstream-Workload and
// Bomstream-Change-Seq (the CHANGES stream sequence of the event). A tombstone
// carries Bomstream-Tombstone: true, the workload's identity as its body and
// Nats-Msg-Id = schemas.TombstoneMsgID(workload, changeSeq).
//
// Order: one replica with Concurrency 1 publishes in CHANGES order. With more
// replicas or Concurrency > 1, two events of one workload may be rendered at
// the same time and reach BOMS out of order; the sink runner restores the
// per-workload order by comparing Bomstream-Change-Seq and skipping a BOM
// older than the one it already applied.
//
// The acknowledgement comes only after the publish is acked by the BOMS
// stream: a crash in between means a redelivery, which the dedupe id absorbs.
// One bad event never blocks the stream: it is retried with backoff up to
// Config.MaxDeliver deliveries, then parked on the DLQ with the reason, while
// the events behind it keep flowing.
package service
