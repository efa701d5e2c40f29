package schemas

import (
	"fmt"
	"strings"
	"time"
)

// CloudEvents attributes of the events bomstream emits.
const (
	SpecVersion     = "1.0"
	ContentTypeJSON = "application/json"

	// TypeObserved is a workload whose inputs changed (or were first seen).
	TypeObserved = "dev.bomstream.workload.observed.v1"
	// TypeDeleted is a tombstone: the workload is gone. It carries identity, no inputs.
	TypeDeleted = "dev.bomstream.workload.deleted.v1"
)

// WorkloadChange is one observed change of one workload, in CloudEvents 1.0
// structured JSON form. ID is "<cluster>:<uid>:<inputHash>" for an observation
// (the same inputs always carry the same key) and "<cluster>:<uid>:deleted" for
// a tombstone. Subject is the workload's Key.
type WorkloadChange struct {
	SpecVersion     string     `json:"specversion"`
	ID              string     `json:"id"`
	Source          string     `json:"source"`
	Type            string     `json:"type"`
	Subject         string     `json:"subject"`
	Time            time.Time  `json:"time"`
	DataContentType string     `json:"datacontenttype,omitempty"`
	Data            ChangeData `json:"data"`
}

// ChangeData is the payload of a WorkloadChange. Inputs and InputHash are set
// for TypeObserved and empty for TypeDeleted.
type ChangeData struct {
	Workload  Workload `json:"workload"`
	InputHash string   `json:"inputHash,omitempty"`
	Inputs    *Inputs  `json:"inputs,omitempty"`
}

// Workload is the identity of a top-level workload.
type Workload struct {
	Cluster    string `json:"cluster"`
	Namespace  string `json:"namespace,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

// Key is the human name of a workload: "<namespace>/<kind>/<name>". Cluster-scoped
// objects have an empty namespace segment.
func (w Workload) Key() string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// String is Key prefixed with the cluster, for log lines and errors.
func (w Workload) String() string { return w.Cluster + "/" + w.Key() }

// NewObserved builds the observation event for inputs; the hash is computed here
// so that an event's id and its inputHash can never disagree. The identity is
// checked with Workload.Validate first.
func NewObserved(source string, at time.Time, in *Inputs) (WorkloadChange, error) {
	if in == nil {
		return WorkloadChange{}, fmt.Errorf("event: nil inputs")
	}
	if err := in.Workload.Validate(); err != nil {
		return WorkloadChange{}, fmt.Errorf("event: %w", err)
	}
	h, err := InputHash(in)
	if err != nil {
		return WorkloadChange{}, fmt.Errorf("event for %s: %w", in.Workload, err)
	}
	w := in.Workload
	return WorkloadChange{
		SpecVersion:     SpecVersion,
		ID:              w.Cluster + ":" + w.UID + ":" + h,
		Source:          source,
		Type:            TypeObserved,
		Subject:         w.Key(),
		Time:            at.UTC(),
		DataContentType: ContentTypeJSON,
		Data:            ChangeData{Workload: w, InputHash: h, Inputs: in},
	}, nil
}

// NewDeleted builds the tombstone of a workload.
func NewDeleted(source string, at time.Time, w Workload) WorkloadChange {
	return WorkloadChange{
		SpecVersion:     SpecVersion,
		ID:              w.Cluster + ":" + w.UID + ":deleted",
		Source:          source,
		Type:            TypeDeleted,
		Subject:         w.Key(),
		Time:            at.UTC(),
		DataContentType: ContentTypeJSON,
		Data:            ChangeData{Workload: w},
	}
}

// IsTombstone reports whether the event says the workload is gone.
func (e WorkloadChange) IsTombstone() bool { return e.Type == TypeDeleted }

// ParseKey splits "NAMESPACE/KIND/NAME" as printed by Workload.Key.
func ParseKey(s string) (namespace, kind, name string, err error) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("workload key %q: want NAMESPACE/KIND/NAME", s)
	}
	return parts[0], parts[1], parts[2], nil
}
