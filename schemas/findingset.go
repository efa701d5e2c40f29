package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
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

// Encode returns the set's subject and body (canonical JSON).
func (s *FindingSet) Encode() (subject string, body []byte, err error) {
	return s.AppendEncode(nil)
}

// AppendEncode is Encode appending the body to buf (a buffer to reuse:
// the stage writes a set for every BOM version that changes a finding),
// grown at most once.
func (s *FindingSet) AppendEncode(buf []byte) (subject string, body []byte, err error) {
	if err := s.check(); err != nil {
		return "", nil, fmt.Errorf("findings of %s: %w", s.Workload, err)
	}
	return FindingSetSubject(s.Workload), s.appendJSON(slices.Grow(buf, s.sizeHint())), nil
}

// sizeHint is about the length of the set's JSON, a little over for
// plain strings: the keys, numbers and times of the set and of each
// finding, and the strings' lengths.
func (s *FindingSet) sizeHint() int {
	w := &s.Workload
	n := 200 + len(w.Cluster) + len(w.Namespace) + len(w.APIVersion) + len(w.Kind) + len(w.Name) + len(w.UID) +
		8*(len(s.Opened)+len(s.Resolved))
	for i := range s.Findings {
		f := &s.Findings[i]
		n += 200 + len(f.State) + len(f.Rule) + len(f.Severity) + len(f.Subject) + len(f.Message) + len(f.Reason)
	}
	return n
}

// appendJSON appends what json.Marshal makes of s, byte for byte, at a
// fraction of its cost: the stage encodes a set for every BOM version
// that changes a finding.
func (s *FindingSet) appendJSON(b []byte) []byte {
	w := &s.Workload
	b = append(b, `{"workload":{"cluster":`...)
	b = appendJSONString(b, w.Cluster)
	if w.Namespace != "" {
		b = appendJSONString(append(b, `,"namespace":`...), w.Namespace)
	}
	b = appendJSONString(append(b, `,"apiVersion":`...), w.APIVersion)
	b = appendJSONString(append(b, `,"kind":`...), w.Kind)
	b = appendJSONString(append(b, `,"name":`...), w.Name)
	b = appendJSONString(append(b, `,"uid":`...), w.UID)
	b = strconv.AppendUint(append(b, `},"changeSeq":`...), s.ChangeSeq, 10)
	b = appendJSONTime(append(b, `,"time":`...), s.Time)
	b = append(b, `,"findings":`...)
	if s.Findings == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range s.Findings {
			f := &s.Findings[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"state":`...), f.State)
			b = appendJSONString(append(b, `,"rule":`...), f.Rule)
			b = appendJSONString(append(b, `,"severity":`...), f.Severity)
			b = appendJSONString(append(b, `,"subject":`...), f.Subject)
			b = appendJSONString(append(b, `,"message":`...), f.Message)
			b = strconv.AppendUint(append(b, `,"changeSeq":`...), f.ChangeSeq, 10)
			b = appendJSONTime(append(b, `,"time":`...), f.Time)
			if !f.OpenedAt.IsZero() {
				b = appendJSONTime(append(b, `,"openedAt":`...), f.OpenedAt)
			}
			if f.Reason != "" {
				b = appendJSONString(append(b, `,"reason":`...), f.Reason)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	for _, l := range []struct {
		name string
		ix   []int
	}{{`,"opened":[`, s.Opened}, {`,"resolved":[`, s.Resolved}} {
		if len(l.ix) == 0 {
			continue
		}
		b = append(b, l.name...)
		for i, x := range l.ix {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(x), 10)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSONTime appends t as json.Marshal does (RFC 3339 with
// nanoseconds, quoted).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONString appends s quoted as json.Marshal does: HTML
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
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
