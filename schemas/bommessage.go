package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Headers of a BOMS message. They are read and written by BOMMessage only;
// a test may name them to build a malformed message.
const (
	HeaderBomHash   = "Bomstream-Bom-Hash"
	HeaderChangeSeq = "Bomstream-Change-Seq"
	HeaderWorkload  = "Bomstream-Workload"
	// HeaderTombstone marks a message that says the workload's AI-BOM is no
	// longer current; HeaderTombstoneReason says why (TombstoneDeleted or
	// TombstoneNotServing).
	HeaderTombstone       = "Bomstream-Tombstone"
	HeaderTombstoneReason = "Bomstream-Tombstone-Reason"
	// HeaderEventTime is the time of the change event (RFC 3339 with
	// nanoseconds): when the state was observed, not when it was stored.
	HeaderEventTime = "Bomstream-Event-Time"
	// HeaderImages lists the BOM's images whose manifest digest is resolved,
	// as the JSON of []ImageDigest (absent when none is).
	HeaderImages = "Bomstream-Images"
	// HeaderMsgID is JetStream's deduplication header (Nats-Msg-Id).
	HeaderMsgID = "Nats-Msg-Id"
)

// BOMMessage is one message on BOMS: a workload's AI-BOM at one version, or
// a tombstone saying its last one is no longer current. It is the only
// place the message's headers are written and read (Encode,
// DecodeBOMMessage).
type BOMMessage struct {
	Workload Workload
	// ChangeSeq is the CHANGES sequence of the event this version comes
	// from: the version's number, increasing per workload.
	ChangeSeq uint64
	// EventTime is when the state was observed; zero when the message does
	// not say (readers then use the time it was stored).
	EventTime time.Time
	// Tombstone is "" for a BOM, else the reason (TombstoneDeleted,
	// TombstoneNotServing).
	Tombstone string

	// Of a BOM: its hash ("sha256:<hex>" of BOM), the hash of the inputs it
	// was rendered from, its images with resolved digests, and its bytes.
	BomHash   string
	InputHash string
	Images    []ImageDigest
	BOM       []byte

	// Facts are what BOM says to the findings rules, when its renderer
	// gave them (transformer.Result.Facts); nil else, and always after a
	// decode: they are never encoded, and a reader of a stored message
	// reads them from BOM.
	Facts *BOMFacts
}

// IsTombstone reports whether m is a tombstone.
func (m *BOMMessage) IsTombstone() bool { return m.Tombstone != "" }

// Subject is the message's subject on BOMS.
func (m *BOMMessage) Subject() string { return BOMsSubject(m.Workload) }

// MsgID is the message's Nats-Msg-Id (see BOMMsgID).
func (m *BOMMessage) MsgID() string { return BOMMsgID(m.Workload, m.ChangeSeq) }

// Encode returns the message's headers (Nats-Msg-Id included) and body. A
// tombstone's body is the canonical JSON of the workload's identity.
func (m *BOMMessage) Encode() (map[string][]string, []byte, error) {
	if err := m.check(); err != nil {
		return nil, nil, err
	}
	h := map[string][]string{
		HeaderWorkload:  {WorkloadHeader(m.Workload)},
		HeaderChangeSeq: {strconv.FormatUint(m.ChangeSeq, 10)},
		HeaderMsgID:     {m.MsgID()},
	}
	if !m.EventTime.IsZero() {
		h[HeaderEventTime] = []string{m.EventTime.UTC().Format(time.RFC3339Nano)}
	}
	if m.IsTombstone() {
		h[HeaderTombstone] = []string{"true"}
		h[HeaderTombstoneReason] = []string{m.Tombstone}
		body, err := CanonicalJSON(m.Workload)
		return h, body, err
	}
	h[HeaderBomHash] = []string{m.BomHash}
	h[HeaderInputHash] = []string{m.InputHash}
	if len(m.Images) > 0 {
		h[HeaderImages] = []string{ImagesHeader(m.Images)}
	}
	return h, m.BOM, nil
}

// bomHashPattern is the shape of a BomHash.
var bomHashPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidBomHash reports whether h is written as a BOM hash: sha256: and 64
// lowercase hex digits.
func ValidBomHash(h string) bool { return bomHashPattern.MatchString(h) }

// check is what Encode and DecodeBOMMessage require of a message.
func (m *BOMMessage) check() error {
	var errs []error
	if m.ChangeSeq == 0 {
		errs = append(errs, fmt.Errorf("header %s: not a positive decimal", HeaderChangeSeq))
	}
	if !m.Workload.complete() {
		errs = append(errs, fmt.Errorf("workload identity incomplete"))
	}
	switch m.Tombstone {
	case "":
		if !ValidBomHash(m.BomHash) {
			errs = append(errs, fmt.Errorf("header %s %q is not sha256:<hex>", HeaderBomHash, m.BomHash))
		}
		if m.InputHash == "" {
			errs = append(errs, fmt.Errorf("header %s missing", HeaderInputHash))
		}
		if len(m.BOM) == 0 {
			errs = append(errs, errors.New("empty body"))
		}
	case TombstoneDeleted, TombstoneNotServing:
	default:
		errs = append(errs, fmt.Errorf("header %s %q is not %s or %s", HeaderTombstoneReason, m.Tombstone, TombstoneDeleted, TombstoneNotServing))
	}
	return errors.Join(errs...)
}

// complete reports whether w names a workload: cluster, uid, kind and name.
func (w Workload) complete() bool {
	return w.Cluster != "" && w.UID != "" && w.Kind != "" && w.Name != ""
}

// DecodeBOMMessage reads a BOMS message stored at subject (not checked when
// ""). It fills every field it can read, and returns with it an error
// naming each header (or the body, or the subject) that is missing or
// malformed: a sink refuses such a message, while a tool that lists or
// checks messages may use what was read. A tombstone's workload is its
// body's; a tombstone with no reason was deleted.
func DecodeBOMMessage(subject string, h map[string][]string, body []byte) (BOMMessage, error) {
	var m BOMMessage
	var errs []error
	get := func(k string) string {
		if v := h[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if v := get(HeaderChangeSeq); v != "" {
		seq, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("header %s %q is not a positive decimal", HeaderChangeSeq, v))
		}
		m.ChangeSeq = seq
	}
	if v := get(HeaderEventTime); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("header %s %q: %w", HeaderEventTime, v, err))
		}
		m.EventTime = t
	}
	if v := get(HeaderWorkload); v != "" {
		if err := json.Unmarshal([]byte(v), &m.Workload); err != nil {
			errs = append(errs, fmt.Errorf("header %s: %w", HeaderWorkload, err))
		}
	}
	if get(HeaderTombstone) == "true" {
		m.Tombstone = get(HeaderTombstoneReason)
		if m.Tombstone == "" {
			m.Tombstone = TombstoneDeleted
		}
		var w Workload
		switch err := json.Unmarshal(body, &w); {
		case err != nil:
			errs = append(errs, fmt.Errorf("tombstone body: %w", err))
		case !w.complete():
			errs = append(errs, errors.New("tombstone body: workload identity incomplete"))
		default:
			m.Workload = w
		}
	} else {
		m.BomHash, m.InputHash, m.BOM = get(HeaderBomHash), get(HeaderInputHash), body
		images, err := parseImagesHeader(get(HeaderImages))
		if err != nil {
			errs = append(errs, err)
		}
		m.Images = images
	}
	if len(errs) == 0 {
		if err := m.check(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && subject != "" && subject != m.Subject() {
		errs = append(errs, fmt.Errorf("subject %s does not match workload %s (want %s)", subject, m.Workload, m.Subject()))
	}
	return m, errors.Join(errs...)
}

// WorkloadHeader is the value of the workload header of a BOMS message: the
// canonical JSON of the workload's identity, so that a sink needs no other
// lookup.
func WorkloadHeader(w Workload) string {
	b, _ := CanonicalJSON(w) // a struct of strings always encodes
	return string(b)
}

// ImagesHeader is the value of the images header of a BOMS message.
func ImagesHeader(images []ImageDigest) string {
	b, _ := CanonicalJSON(images) // a slice of string structs always encodes
	return string(b)
}

// parseImagesHeader reads the value written by ImagesHeader; "" is none.
func parseImagesHeader(v string) ([]ImageDigest, error) {
	if v == "" {
		return nil, nil
	}
	var out []ImageDigest
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("parse %s header: %w", HeaderImages, err)
	}
	return out, nil
}
