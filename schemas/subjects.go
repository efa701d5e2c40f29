package schemas

import (
	"strconv"
	"strings"
)

// Stream names and subjects, as in docs/ARCHITECTURE.md. Subjects carry the
// uid, never names: Kubernetes names may contain dots.
const (
	StreamChanges = "CHANGES"
	StreamBOMs    = "BOMS"
	StreamDLQ     = "DLQ"

	SubjectChangesPrefix = "bomstream.changes."
	SubjectBOMsPrefix    = "bomstream.boms."
	SubjectDLQPrefix     = "bomstream.dlq."
)

// HeaderInputHash carries the hash of a workload's inputs on CHANGES and
// BOMS messages; the other BOMS headers are in bommessage.go.
const HeaderInputHash = "Bomstream-Input-Hash"

// HeaderRerender marks a CHANGES event that repeats the workload's last
// one because a new transformer renders it differently: its value is the
// transformer's fingerprint (package transformer/rerender).
const HeaderRerender = "Bomstream-Rerender"

// HeaderReason carries why a message went to the DLQ.
const HeaderReason = "Bomstream-Dlq-Reason"

// ChangesSubject is bomstream.changes.<cluster>.<uid>.
func ChangesSubject(w Workload) string { return SubjectChangesPrefix + w.Cluster + "." + w.UID }

// BOMsSubject is bomstream.boms.<cluster>.<uid>.
func BOMsSubject(w Workload) string { return SubjectBOMsPrefix + w.Cluster + "." + w.UID }

// DLQSubject is bomstream.dlq.<stage>.
func DLQSubject(stage string) string { return SubjectDLQPrefix + stage }

// ChangeMsgID is the Nats-Msg-Id of a publish to CHANGES: "<cluster>:<uid>:<n>",
// n being the subject's last sequence the publisher saw.
func ChangeMsgID(w Workload, lastSeq uint64) string {
	return w.Cluster + ":" + w.UID + ":" + strconv.FormatUint(lastSeq, 10)
}

// BOMMsgID is the Nats-Msg-Id of a BOMS message, BOM or tombstone:
// "<cluster>:<uid>:<changeSeq>", the version's identity. A retried or
// re-rendered change is dropped as a duplicate, while a workload that goes
// A -> B -> A, or is deleted and re-created identically, gets a message per
// change.
func BOMMsgID(w Workload, changeSeq uint64) string {
	return w.Cluster + ":" + w.UID + ":" + strconv.FormatUint(changeSeq, 10)
}

// Reasons a BOMS tombstone gives (HeaderTombstoneReason).
const (
	TombstoneDeleted    = "deleted"
	TombstoneNotServing = "not-serving"
)

// Stages and their durable consumers. A stage names who gave up on a dead
// letter (bomstream.dlq.<stage>) and labels its metrics.
const (
	// StageTransformer is the transformer's stage, and the default name
	// of its durable consumer on CHANGES.
	StageTransformer = "transformer"
	// sinkStagePrefix and sinkDurablePrefix precede a sink's name in its
	// stage and in the default name of its durable consumer on BOMS.
	sinkStagePrefix   = "sink."
	sinkDurablePrefix = "sink-"
)

// SinkStage is the stage of the sink called name: "sink.<name>".
func SinkStage(name string) string { return sinkStagePrefix + name }

// SinkOfStage returns the sink whose stage stage is.
func SinkOfStage(stage string) (name string, ok bool) {
	return strings.CutPrefix(stage, sinkStagePrefix)
}

// SinkDurable is the default durable consumer of the sink called name:
// "sink-<name>".
func SinkDurable(name string) string { return sinkDurablePrefix + name }
