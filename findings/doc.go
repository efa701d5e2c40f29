// Package findings is the findings stage: it raises what a policy says is
// wrong in the AI-BOMs, as they are rendered, and keeps each finding's
// history on FINDINGS.
//
// A policy is a rules file (YAML; the defaults in rules.yaml are
// embedded). Each rule has an id, a check, a severity and the check's
// parameters. [ParseRules] reads one and names the file, rule and field of
// every problem. The checks are model-unpinned, model-source,
// runtime-version, image-digest, runtime-inferred and model-license.
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
// [Rules.Evaluate] is a pure function of a BOM's [Facts]. The transformer
// gives the facts with the BOM it renders; [ReadFacts] reads the same from
// the JSON.
//
// The stage runs in one of two ways. In `bomstream run` it follows the
// transformer stage of its process ([Stage.Follow], [Stage.RunInline]).
// Each version is evaluated once it is stored, before its change event is
// acked, and no consumer of BOMS exists for findings. A crash between the
// two steps redelivers the change event, and the transformer hands the
// stored version over again. Elsewhere (`bomstream sink`) the stage
// consumes BOMS through the engine ([Stage.Run]). [Stage.Replay] and a
// dead letter's retry always do. Both ways take the same steps, so two
// processes side by side write nothing twice. A BOM put back by `check
// --repair` is evaluated by the next `findings replay`.
//
// A finding is named by its workload, its rule and its subject: what it is
// about in the BOM (a model id, an image reference, a runtime name). A
// workload's finding set holds all its findings, open or resolved, and
// says which this version opened and resolved. One set is written per
// version that changes something, whatever the number of findings.
//
// The stage decides from the last set only, never from memory. A version
// older than the newest one the set was written from is skipped. A set is
// appended only after the sequence the stage read (0 for none): another
// writer appending first makes the stage read again and decide again. A
// replay, a redelivery or a second replica therefore writes no finding
// twice. A tombstone resolves every open finding of its workload.
//
// The stage reads a workload's last set through the read side
// ([github.com/bomstream/bomstream/inventory/findings.WorkloadState]),
// which also answers every reader: List, OpenFor, the findings index of
// the web pages and the API. Stores written before finding sets hold one
// subject per finding; the read side still reads them, and the stage seeds
// a workload's first set from them. A workload the process knows no
// findings of is taken to have none, which saves a read: the append fails
// if that is wrong, and the stage then reads.
//
// Version checks go through a [VersionMatcher]. [DefaultVersionMatcher]
// compares what imageref.ParseVersion reads. A version it cannot
// compare is itself a finding of the rule: it never passes silently. The
// gauge bomstream_findings{rule,severity,cluster,namespace} counts the
// open findings the process knows of.
package findings
