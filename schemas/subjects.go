package schemas

import "strconv"

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
