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
	// HeaderTombstone marks a BOMS message that says the workload's AI-BOM is
	// no longer current; HeaderTombstoneReason says why ("deleted", or
	// "not-serving" when it still exists but its inputs render no BOM).
	HeaderTombstone       = "Bomstream-Tombstone"
	HeaderTombstoneReason = "Bomstream-Tombstone-Reason"
	// HeaderEventTime is the time of the change event (RFC 3339 with
	// nanoseconds): when the state was observed, not when it was stored.
	HeaderEventTime = "Bomstream-Event-Time"
	// HeaderImages lists the BOM's images whose manifest digest is resolved,
	// as the JSON of []ImageDigest (absent when none is).
	HeaderImages = "Bomstream-Images"
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

// BOMMsgID is the Nats-Msg-Id of a BOMS message, BOM or tombstone:
// "<cluster>:<uid>:<changeSeq>", the version's identity. A retried or
// re-rendered change is dropped as a duplicate, while a workload that goes
// A -> B -> A, or is deleted and re-created identically, gets a message per
// change.
func BOMMsgID(w Workload, changeSeq uint64) string {
	return w.Cluster + ":" + w.UID + ":" + strconv.FormatUint(changeSeq, 10)
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

// Reasons a BOMS tombstone gives (HeaderTombstoneReason).
const (
	TombstoneDeleted    = "deleted"
	TombstoneNotServing = "not-serving"
)

// ImagesHeader is the value of the Bomstream-Images header.
func ImagesHeader(images []ImageDigest) string {
	b, _ := CanonicalJSON(images) // a slice of string structs always encodes
	return string(b)
}

// ParseImagesHeader reads the value written by ImagesHeader; "" is none.
func ParseImagesHeader(v string) ([]ImageDigest, error) {
	if v == "" {
		return nil, nil
	}
	var out []ImageDigest
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("parse %s header: %w", HeaderImages, err)
	}
	return out, nil
}
