package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The FINDINGS stream holds the history of every policy finding: one
// finding set per workload and BOM version that changes its findings
// (FindingSet, on SubjectFindingSetPrefix). Stores written before finding
// sets hold one "opened" and one "resolved" event per finding instead
// (FindingEvent), on a subject of its own under SubjectFindingsPrefix, the
// last message of a subject being the finding's state; the readers still
// read them. FindingEvent is also what the readers answer with.
const (
	StreamFindings        = "FINDINGS"
	SubjectFindingsPrefix = "bomstream.findings."
	// StageFindings is the findings stage, and the default name of its
	// durable consumer on BOMS.
	StageFindings = "findings"
)

// States of a finding.
const (
	FindingOpened   = "opened"
	FindingResolved = "resolved"
)

// FindingEvent is one message on FINDINGS: a finding opened or resolved by
// a version of a workload's AI-BOM. A finding is named by (workload, rule,
// subject); its events carry that name, so that any one of them can be read
// alone. It is the only codec of FINDINGS messages (Encode,
// DecodeFindingEvent).
type FindingEvent struct {
	State    string   `json:"state"`
	Workload Workload `json:"workload"`
	// Rule is the id of the rule in the rules file; Severity is the rule's
	// severity when the finding was opened.
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	// Subject is what the finding is about in the BOM: a model id, an image
	// reference, a runtime name.
	Subject string `json:"subject"`
	Message string `json:"message"`
	// ChangeSeq is the version of the BOM (or tombstone) that opened or
	// resolved the finding; Time when that state was observed.
	ChangeSeq uint64    `json:"changeSeq"`
	Time      time.Time `json:"time"`
	// Of a resolved event: when the finding was opened, and why it is
	// resolved ("fixed", or the tombstone's reason).
	OpenedAt time.Time `json:"openedAt,omitzero"`
	Reason   string    `json:"reason,omitempty"`
}

// FindingFixed is the reason of a finding resolved by a BOM that no longer
// shows it.
const FindingFixed = "fixed"

// FindingSeverities are the severities a rule may give its findings,
// from the least to the most severe.
var FindingSeverities = []string{"info", "low", "medium", "high", "critical"}

// ValidFindingSeverity reports whether s is one of FindingSeverities.
func ValidFindingSeverity(s string) bool { return slices.Contains(FindingSeverities, s) }

// ValidFindingRule reports whether id can name a rule: 1-63 characters of
// [a-z0-9-], starting with a letter or digit (it is a subject token).
// Every finding set written is checked, hence no regular expression.
func ValidFindingRule(id string) bool {
	if len(id) == 0 || len(id) > 63 || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// FindingSubjectKey is the subject token of a finding's subject: the first
// 16 hex digits of its sha256 (subjects may hold dots and slashes).
func FindingSubjectKey(subject string) string {
	h := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(h[:8])
}

// FindingsSubject is bomstream.findings.<cluster>.<uid>.<rule>.<key of
// subject>: a finding's subject in the per-finding layout, and its name
// (the gauge's, the index's).
func FindingsSubject(w Workload, rule, subject string) string {
	return SubjectFindingsPrefix + w.Cluster + "." + w.UID + "." + rule + "." + FindingSubjectKey(subject)
}

// FindingsOfWorkload is the filter of every finding subject of w.
func FindingsOfWorkload(w Workload) string {
	return SubjectFindingsPrefix + w.Cluster + "." + w.UID + ".>"
}

// FindingMsgID is the Nats-Msg-Id of a FINDINGS event: the finding's
// subject and the subject's last sequence its writer saw. Two writers (or a
// retry, or a replay) that decide the same next event from the same state
// write it once; written with Nats-Expected-Last-Subject-Sequence, two
// different decisions never both land.
func FindingMsgID(subject string, lastSeq uint64) string {
	return strings.TrimPrefix(subject, SubjectFindingsPrefix) + ":" + strconv.FormatUint(lastSeq, 10)
}

// StreamSubject is the event's subject on FINDINGS.
func (e *FindingEvent) StreamSubject() string { return FindingsSubject(e.Workload, e.Rule, e.Subject) }

// Encode returns the event's subject and body (canonical JSON).
func (e *FindingEvent) Encode() (subject string, body []byte, err error) {
	if err := e.check(); err != nil {
		return "", nil, fmt.Errorf("finding %s %s: %w", e.Rule, e.Subject, err)
	}
	body, err = json.Marshal(e)
	if err != nil {
		return "", nil, fmt.Errorf("finding %s %s: %w", e.Rule, e.Subject, err)
	}
	return e.StreamSubject(), body, nil
}

func (e *FindingEvent) check() error {
	var errs []error
	if e.State != FindingOpened && e.State != FindingResolved {
		errs = append(errs, fmt.Errorf("state %q is not %s or %s", e.State, FindingOpened, FindingResolved))
	}
	if !e.Workload.complete() {
		errs = append(errs, errors.New("workload identity incomplete"))
	}
	if !ValidFindingRule(e.Rule) {
		errs = append(errs, fmt.Errorf("rule %q is not 1-63 characters of [a-z0-9-]", e.Rule))
	}
	if e.Subject == "" {
		errs = append(errs, errors.New("no subject"))
	}
	if e.ChangeSeq == 0 {
		errs = append(errs, errors.New("no change sequence"))
	}
	return errors.Join(errs...)
}

// DecodeFindingEvent reads a FINDINGS message stored at subject (not
// checked when ""), naming what is missing or malformed.
func DecodeFindingEvent(subject string, body []byte) (FindingEvent, error) {
	var e FindingEvent
	if err := json.Unmarshal(body, &e); err != nil {
		return e, fmt.Errorf("finding event: %w", err)
	}
	if err := e.check(); err != nil {
		return e, fmt.Errorf("finding event: %w", err)
	}
	if subject != "" && subject != e.StreamSubject() {
		return e, fmt.Errorf("finding event: subject %s does not match %s %s of %s (want %s)", subject, e.Rule, e.Subject, e.Workload, e.StreamSubject())
	}
	return e, nil
}
