package schemas

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestFindingEventCodec(t *testing.T) {
	w := Workload{Cluster: "prod", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "chat", UID: "u-1"}
	ev := FindingEvent{State: FindingOpened, Workload: w, Rule: "model-unpinned", Severity: "medium", Subject: "org/m.v1", ChangeSeq: 3, Time: time.Unix(5, 0).UTC()}
	subj, body, err := ev.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(subj, "bomstream.findings.prod.u-1.model-unpinned.") || strings.Count(subj, ".") != 5 {
		t.Errorf("subject %s", subj)
	}
	got, err := DecodeFindingEvent(subj, body)
	if err != nil || got != ev {
		t.Errorf("round trip: %+v %v", got, err)
	}
	if _, err := DecodeFindingEvent("bomstream.findings.prod.u-1.model-unpinned.00", body); err == nil {
		t.Error("a subject of another finding was accepted")
	}
	bad := ev
	bad.State, bad.Rule, bad.ChangeSeq = "closed", "Model_Unpinned", 0
	_, _, err = bad.Encode()
	for _, want := range []string{`state "closed"`, `rule "Model_Unpinned"`, "no change sequence"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("encode of a bad event: %v, want %s", err, want)
		}
	}
	if FindingMsgID(subj, 7) != strings.TrimPrefix(subj, SubjectFindingsPrefix)+":7" {
		t.Errorf("msg id %s", FindingMsgID(subj, 7))
	}
}

func TestFindingSetCodec(t *testing.T) {
	w := Workload{Cluster: "prod", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "chat", UID: "u-1"}
	set := FindingSet{Workload: w, ChangeSeq: 4, Time: time.Unix(9, 0).UTC(), Findings: []SetFinding{
		{State: FindingOpened, Rule: "image-digest", Severity: "low", Subject: "a:1", ChangeSeq: 4, Time: time.Unix(9, 0).UTC()},
		{State: FindingResolved, Rule: "model-unpinned", Severity: "medium", Subject: "org/m", ChangeSeq: 4, Time: time.Unix(9, 0).UTC(), OpenedAt: time.Unix(5, 0).UTC(), Reason: FindingFixed},
	}, Opened: []int{0}, Resolved: []int{1}}
	subj, body, err := set.Encode()
	if err != nil || subj != "bomstream.findingset.prod.u-1" {
		t.Fatalf("encode: %s %v", subj, err)
	}
	if strings.HasPrefix(subj, SubjectFindingsPrefix) {
		t.Errorf("%s is under the per-finding layout's prefix", subj)
	}
	got, err := DecodeFindingSet(subj, body)
	if err != nil || got.Event(1).OpenedAt != set.Event(1).OpenedAt || got.Event(1).Workload != w || len(got.Opened) != 1 {
		t.Errorf("round trip: %+v %v", got, err)
	}
	if _, err := DecodeFindingSet("bomstream.findingset.prod.u-2", body); err == nil {
		t.Error("the subject of another workload was accepted")
	}
	bad := set
	bad.ChangeSeq, bad.Opened = 0, []int{2}
	bad.Findings = append([]SetFinding{{State: "closed", Rule: "x", Subject: "y", ChangeSeq: 1}}, set.Findings...)
	_, _, err = bad.Encode()
	for _, want := range []string{"no change sequence", `state "closed"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("encode of a bad set: %v, want %s", err, want)
		}
	}
	bad.Findings = set.Findings
	if _, _, err = bad.Encode(); err == nil || !strings.Contains(err.Error(), "index 2") {
		t.Errorf("an index out of range: %v", err)
	}
}

// The hand-written check says what the documented pattern says.
func TestValidFindingRuleIsThePattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	ids := []string{"", "a", "-", "-a", "a-", "0", "model-unpinned", "Model", "a_b", "a.b", "a b", "é", "a\x00",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "9" + strings.Repeat("-", 62), "z{", "a`"}
	for c := range 256 {
		ids = append(ids, "x"+string(rune(c)), string([]byte{byte(c)}))
	}
	for _, id := range ids {
		if got, want := ValidFindingRule(id), pattern.MatchString(id); got != want {
			t.Errorf("ValidFindingRule(%q) = %v, the pattern says %v", id, got, want)
		}
	}
}
