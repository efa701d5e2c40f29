// Package rerender brings a store's BOMs up to date with a new transformer.
//
// A BOM is rendered once, when its workload's inputs change. A new build of
// bomstream, or a new rules file, may render the same inputs differently:
// better detection would otherwise reach a workload only at its next
// change. Rerender renders the current state of every workload again and,
// where the result differs from the workload's current BOM, appends a copy
// of its last change event to CHANGES, so that the ordinary pipeline
// (transformer -> BOMS -> sinks) makes exactly one new version of it:
//
//	CHANGES last event per subject ──┬─ a deletion                       ─▶ nothing
//	                                 ├─ not handled by the transformer yet ─▶ nothing (it renders it with the new rules)
//	                                 └─ render it ──compare content with BOMS' last message
//	                                        ├─ same content              ─▶ nothing
//	                                        └─ different, newly serving,
//	                                           or no longer serving      ─▶ append a copy (header Bomstream-Rerender)
//
// Content is the BOM without what only names bomstream's own build:
// metadata.tools, the serial number (it hashes the tool's version),
// metadata.timestamp and the document version. A new tool version alone
// therefore publishes nothing, while a rule that finds a runtime, model or
// setting it did not find before gives each affected workload one new
// version, and Dependency-Track one upload per affected workload.
//
// The copy carries the same inputs and input hash (the collector sees no
// change in it), the time of the re-render, and Nats-Msg-Id
// "<cluster>:<uid>:<n>" with Nats-Expected-Last-Subject-Sequence n, n the
// sequence of the event it copies: two processes re-rendering at once (two
// transformer replicas starting together) cannot both append, and an event
// the collector appended meanwhile wins. The loser reads the workload again
// and decides again: its last event is then one the transformer has not
// handled yet, which needs nothing.
//
// "Handled by the transformer" is the ack floor of its durable consumer on
// CHANGES: an event at or below it has its outcome on BOMS (or was
// dead-lettered), an event above it will be rendered by the running
// transformer, with the current rules.
//
// The fingerprint of the transformer the store was last re-rendered with
// (transformer.Renderer.Fingerprint) is kept in the KV bucket
// "bomstream-rendered", key "fingerprint". AtStart, called by the process
// that runs the transformer stage, re-renders when it is missing (a store
// written by a build before this package) or differs, and stores the new
// one after a pass that went through. `bomstream rerender [--dry-run]` runs
// a pass on demand; a dry run publishes nothing and returns what would
// change.
package rerender
