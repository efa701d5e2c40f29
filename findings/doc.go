// Package findings raises what a policy says is wrong in the AI-BOMs, as
// they are rendered, and keeps the history of each finding.
//
// A policy is a rules file (YAML; the defaults in rules.yaml are embedded):
// each rule has an id, a check, a severity and the check's parameters.
// ParseRules reads one and reports every problem with the file, the rule
// and the field at fault. The checks are model-unpinned, model-source (an
// organisation or registry outside allow-lists), runtime-version (below a
// minimum, inside a deny range), image-digest, runtime-inferred and
// model-license.
//
// Data flows like this:
//
//	transformer stage, same process ──Stage.Follow──┐   (inline: run)
//	BOMS ──engine (durable "findings")──▶ handler ──┤   (sink, replay, dlq)
//	         the BOM's facts ─▶ Rules.Evaluate (pure) ◀┘
//	         the workload's finding set on FINDINGS (one direct get of the
//	         last message of its subject)
//	         ─▶ the next set: findings newly shown opened, open findings
//	            no longer shown resolved; nothing written when neither
//	──▶ FINDINGS  bomstream.findingset.<cluster>.<uid>   (schemas.FindingSet)
//
// The stage runs in one of two ways. Where the transformer stage runs in
// the same process (`bomstream run`), the stage follows it
// (service.Follower): each BOM version is evaluated once it is stored and
// before its change event is acked, from the message in hand and the
// facts the transformer gives with it (schemas.BOMMessage.Facts, what
// ReadFacts would read from the JSON), and no consumer of BOMS exists for
// findings (RunInline). A crash between the
// two steps redelivers the change event, whose stored version the
// transformer hands over again. Elsewhere (`bomstream sink`) it consumes
// BOMS (Run); Replay and a dead letter's retry always do. Both ways take
// the same steps below, so a process of either kind beside another writes
// nothing twice. A BOM put back by `check --repair` is evaluated by the
// next `findings replay`.
//
// A finding is named by (workload, rule, subject), the subject being what
// it is about in the BOM (a model id, an image reference, a runtime name).
// A workload's finding set is the state of all its findings, open or
// resolved, each as its last event would say (state, severity, message,
// the version and time it was opened or resolved), and which of them this
// version opened and resolved: one message per BOM version that changes
// something, whatever the number of findings. The stage decides from the
// last set only, never from memory: a BOM version older than the newest
// version the workload's findings were written from is skipped, a finding
// already in the state asked for changes nothing, and each set is appended
// with Nats-Expected-Last-Subject-Sequence (the last set's sequence, 0 for
// none); another writer appending first, or a retried append whose first
// attempt was stored, makes the stage read again and decide again. Replaying BOMS, a redelivery or a
// second replica therefore never writes a finding twice. A tombstone
// resolves every open finding of its workload (reason: the tombstone's).
// One read is saved: a workload the process knows no findings of (from
// its read of FINDINGS at start and its reads and writes since) is taken
// to have none when the version opens something, since the append (after
// sequence 0) fails if that is wrong, and the stage then reads.
//
// Stores written before finding sets hold one subject per finding
// (bomstream.findings.<cluster>.<uid>.<rule>.<key>, schemas.FindingEvent),
// whose last event is its state. They stay readable: the readers take a
// workload's finding set when it has one, else its per-finding events; the
// stage seeds a workload's first set from them. Whether a store holds any
// is asked once per process (one direct get of the pattern's last
// message, again a minute later while it holds none), so a store without
// any costs no read per workload.
//
// Version checks go through a VersionMatcher; DefaultVersionMatcher
// compares what transformer.ParseVersion reads. A version it cannot
// compare is itself a finding of the rule: it never passes silently.
//
// The readers of FINDINGS (List, OpenFor, the Index the web pages and the
// API follow) are the read side's: package
// github.com/bomstream/bomstream/inventory/findings, which this stage also
// reads a workload's last set through (WorkloadState). The gauge
// bomstream_findings{rule,severity,cluster,namespace} counts the open
// findings the process knows of.
package findings
