package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// SubjectFindingSetPrefix is the prefix of the workloads' finding sets on
// FINDINGS: bomstream.findingset.<cluster>.<uid>, one subject per
// workload, whose last message is the state of all its findings. (Stores
// written before the sets hold one subject per finding instead,
// FindingsSubject, which the readers still read.)
const SubjectFindingSetPrefix = "bomstream.findingset."

// FindingSet is one message on FINDINGS: the state of every finding of a
// workload after a version of its AI-BOM (or a tombstone), and which of
// them that version opened and resolved. It is written only when a
// version opens or resolves something; its last message per workload is
// the workload's state. It is the only codec of those messages (Encode,
// DecodeFindingSet).
type FindingSet struct {
	Workload Workload `json:"workload"`
	// ChangeSeq is the version of the BOM (or tombstone) the set was
	// written from; Time when it was observed.
	ChangeSeq uint64    `json:"changeSeq"`
	Time      time.Time `json:"time"`
	// Findings is every finding of the workload, open or resolved, by rule
	// then subject, each as its last event would say.
	Findings []SetFinding `json:"findings"`
	// Opened and Resolved index Findings: what this version changed.
	Opened   []int `json:"opened,omitempty"`
	Resolved []int `json:"resolved,omitempty"`
}

// SetFinding is a finding of a FindingSet: a FindingEvent without its
// workload (the set's).
type SetFinding struct {
	State     string    `json:"state"`
	Rule      string    `json:"rule"`
	Severity  string    `json:"severity"`
	Subject   string    `json:"subject"`
	Message   string    `json:"message"`
	ChangeSeq uint64    `json:"changeSeq"`
	Time      time.Time `json:"time"`
	OpenedAt  time.Time `json:"openedAt,omitzero"`
	Reason    string    `json:"reason,omitempty"`
}

// SetFindingOf is ev without its workload.
func SetFindingOf(ev FindingEvent) SetFinding {
	return SetFinding{State: ev.State, Rule: ev.Rule, Severity: ev.Severity, Subject: ev.Subject, Message: ev.Message,
		ChangeSeq: ev.ChangeSeq, Time: ev.Time, OpenedAt: ev.OpenedAt, Reason: ev.Reason}
}

// Event is the i-th finding of s as a FindingEvent.
func (s *FindingSet) Event(i int) FindingEvent {
	f := s.Findings[i]
	return FindingEvent{State: f.State, Workload: s.Workload, Rule: f.Rule, Severity: f.Severity, Subject: f.Subject, Message: f.Message,
		ChangeSeq: f.ChangeSeq, Time: f.Time, OpenedAt: f.OpenedAt, Reason: f.Reason}
}

// FindingSetSubject is bomstream.findingset.<cluster>.<uid>.
func FindingSetSubject(w Workload) string {
	return SubjectFindingSetPrefix + w.Cluster + "." + w.UID
}

// FindingSetMsgID is the Nats-Msg-Id of a finding set: its workload and
// the last sequence of its subject its writer saw (0: none). Two writers
// (or a retry, or a replay) that decide the same next set from the same
// state write it once; written with Nats-Expected-Last-Subject-Sequence,
// two different decisions never both land.
func FindingSetMsgID(w Workload, lastSeq uint64) string {
	return "set." + w.Cluster + "." + w.UID + ":" + strconv.FormatUint(lastSeq, 10)
}

// Encode returns the set's subject and body (canonical JSON).
func (s *FindingSet) Encode() (subject string, body []byte, err error) {
	if err := s.check(); err != nil {
		return "", nil, fmt.Errorf("findings of %s: %w", s.Workload, err)
	}
	body, err = json.Marshal(s)
	if err != nil {
		return "", nil, fmt.Errorf("findings of %s: %w", s.Workload, err)
	}
	return FindingSetSubject(s.Workload), body, nil
}

func (s *FindingSet) check() error {
	var errs []error
	if !s.Workload.complete() {
		errs = append(errs, errors.New("workload identity incomplete"))
	}
	if s.ChangeSeq == 0 {
		errs = append(errs, errors.New("no change sequence"))
	}
	for i := range s.Findings {
		ev := s.Event(i)
		if err := ev.check(); err != nil {
			errs = append(errs, fmt.Errorf("finding %d (%s %s): %w", i, ev.Rule, ev.Subject, err))
		}
	}
	for _, ix := range [][]int{s.Opened, s.Resolved} {
		for _, i := range ix {
			if i < 0 || i >= len(s.Findings) {
				errs = append(errs, fmt.Errorf("index %d out of the %d findings", i, len(s.Findings)))
			}
		}
	}
	return errors.Join(errs...)
}

// DecodeFindingSet reads a finding set stored at subject (not checked
// when ""), naming what is missing or malformed.
func DecodeFindingSet(subject string, body []byte) (FindingSet, error) {
	var s FindingSet
	if err := json.Unmarshal(body, &s); err != nil {
		return s, fmt.Errorf("finding set: %w", err)
	}
	if err := s.check(); err != nil {
		return s, fmt.Errorf("finding set: %w", err)
	}
	if subject != "" && subject != FindingSetSubject(s.Workload) {
		return s, fmt.Errorf("finding set: subject %s is not that of %s (want %s)", subject, s.Workload, FindingSetSubject(s.Workload))
	}
	return s, nil
}
