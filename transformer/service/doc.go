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
// Every message it publishes on BOMS is a schemas.BOMMessage, encoded by
// its Encode: a BOM (its bytes, hash, input hash, images, the workload and
// the change sequence of the event) or a tombstone, on
// schemas.BOMsSubject(workload), with Nats-Msg-Id schemas.BOMMsgID(workload,
// changeSeq): a redelivered or re-rendered event is dropped by the stream's
// duplicate window, while each change of a workload gets a message.
//
// Flow within one replica: a pull request fetches up to Config.MaxInFlight
// events; each goes to one of Config.Concurrency renderers, chosen by its
// subject; a renderer renders and publishes the BOM asynchronously (without
// waiting for the stream's ack) and goes on with its next event, while the
// event waits for the publish ack and is then acked with DoubleAck. At most
// MaxInFlight events are between fetch and ack at any time.
//
// Order: one replica renders and publishes each workload's events in CHANGES
// order, whatever its Concurrency (publishes on one connection are stored in
// the order they are sent). With more replicas, or when an event is retried
// after a failure, two events of one workload may reach BOMS out of order;
// the sink runner restores the per-workload order by comparing change
// sequences and skipping a BOM older than the one it already applied.
//
// The acknowledgement comes only after the publish is acked by the BOMS
// stream: a crash in between means a redelivery, which the dedupe id absorbs.
// A publish that is not acked within 30s counts as failed and the event is
// retried.
// Outcome and Publish are the same steps without the consumer: what the
// stage publishes for a stored event, and its publish. `bomstream check
// --repair` uses them to put back outcomes the store lost, byte for byte.
//
// A Follower (Service.Follow) acts on each stored message before its event
// is acked: the findings stage of the same process evaluates the BOM in
// hand this way. A redelivered event whose message is stored already is
// handed to the follower again from BOMS, since the process that stored it
// may have stopped before its follower acted.
//
// A re-render (package transformer/rerender) is no special case here: it
// appends a copy of a workload's last change to CHANGES, which the stage
// renders as any event, into a new version.
//
// One bad event never blocks the stream: it is retried with backoff up to
// Config.MaxDeliver deliveries, then parked on the DLQ with the reason, while
// the events behind it keep flowing.
package service
