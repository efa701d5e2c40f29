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
//	BOMS ──engine (durable "findings")──▶ Stage.handler
//	         schemas.DecodeBOMMessage ─▶ ReadFacts ─▶ Rules.Evaluate   (pure)
//	         the workload's findings on FINDINGS (last event per subject)
//	         ─▶ one "opened" event per finding newly shown,
//	            one "resolved" event per open finding no longer shown
//	──▶ FINDINGS  bomstream.findings.<cluster>.<uid>.<rule>.<key of subject>
//
// A finding is named by (workload, rule, subject), the subject being what
// it is about in the BOM (a model id, an image reference, a runtime name);
// it has a subject of its own on FINDINGS, whose last message is its state.
// The stage decides from that state only, never from memory: a BOM version
// older than the newest version the workload's findings were written from
// is skipped, a finding already in the state asked for gets no event, and
// each event is appended with Nats-Expected-Last-Subject-Sequence and a
// Nats-Msg-Id naming the sequence it follows. Replaying BOMS, a redelivery
// or a second replica therefore never writes a finding twice. A tombstone
// resolves every open finding of its workload (reason: the tombstone's).
//
// Version checks go through a VersionMatcher; DefaultVersionMatcher
// compares what transformer.ParseVersion reads. A version it cannot
// compare is itself a finding of the rule: it never passes silently.
//
// Readers: List and ListPage (the current state of every finding, for
// `bomstream findings list` and Handler, /api/v1/findings), OpenFor (the
// open findings of given workloads, for `bomstream find --findings`), and
// Index, which reads FINDINGS once and follows it, keeping per finding its
// state, rule, severity, subject and last sequence, grouped by workload,
// for readers that ask often: the web pages and /api/v1/findings count the
// open findings of each row and list a page of findings from it, in List's
// order, reading back only the page's events. The
// gauge bomstream_findings{rule,severity,cluster,namespace} counts the open
// findings the process knows of.
package findings
