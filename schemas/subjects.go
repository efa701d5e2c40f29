package schemas

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// Message headers on BOMS.
const (
	HeaderBomHash   = "Bomstream-Bom-Hash"
	HeaderInputHash = "Bomstream-Input-Hash"
	HeaderChangeSeq = "Bomstream-Change-Seq"
	HeaderWorkload  = "Bomstream-Workload"
	// HeaderTombstone marks a BOMS message that says the workload is gone.
	HeaderTombstone = "Bomstream-Tombstone"
	// HeaderReason carries why a message went to the DLQ.
	HeaderReason = "Bomstream-Dlq-Reason"
)

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

// TombstoneMsgID is the Nats-Msg-Id of a tombstone on BOMS: one per deletion
// event, so that a retried publish is dropped but a later deletion is not.
func TombstoneMsgID(w Workload, changeSeq uint64) string {
	return "tombstone:" + w.Cluster + ":" + w.UID + ":" + strconv.FormatUint(changeSeq, 10)
}

// WorkloadHeader is the value of the Bomstream-Workload header: the canonical
// JSON of the workload's identity, so that a sink needs no other lookup.
func WorkloadHeader(w Workload) string {
	b, _ := CanonicalJSON(w) // a struct of strings always encodes
	return string(b)
}

// ParseWorkloadHeader reads the value written by WorkloadHeader.
func ParseWorkloadHeader(v string) (Workload, error) {
	var w Workload
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return w, fmt.Errorf("parse %s header: %w", HeaderWorkload, err)
	}
	if w.Cluster == "" || w.UID == "" || w.Kind == "" || w.Name == "" {
		return w, fmt.Errorf("parse %s header %q: identity incomplete", HeaderWorkload, v)
	}
	return w, nil
}
