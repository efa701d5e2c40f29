package schemas

import (
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
