package schemas

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Encode writes what json.Marshal writes, byte for byte: on sets of every
// shape (nil and empty lists, omitted fields, zero and far times) and on
// strings of every byte, rune and escape.
func TestFindingSetEncodeIsMarshal(t *testing.T) {
	if n := reflect.TypeFor[Workload]().NumField(); n != 6 {
		t.Fatalf("Workload has %d fields: appendJSON writes 6", n)
	}
	if n := reflect.TypeFor[SetFinding]().NumField(); n != 9 {
		t.Fatalf("SetFinding has %d fields: appendJSON writes 9", n)
	}
	if n := reflect.TypeFor[FindingSet]().NumField(); n != 6 {
		t.Fatalf("FindingSet has %d fields: appendJSON writes 6", n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	pieces := []string{"", "a", "<&>", `"\`, "\u2028\u2029", "é漢🙂", "\xff\xfe", all.String(), "\x00\x1f\b\f\n\r\t"}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	times := []time.Time{{}, time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600)), time.Unix(0, 1)}
	for i := range 2000 {
		s := &FindingSet{
			Workload:  Workload{Cluster: str(), Namespace: str(), APIVersion: str(), Kind: str(), Name: str(), UID: str()},
			ChangeSeq: rng.Uint64(), Time: times[rng.IntN(len(times))],
		}
		switch i % 3 {
		case 0: // nil findings
		case 1:
			s.Findings = []SetFinding{}
		default:
			for range 1 + rng.IntN(4) {
				s.Findings = append(s.Findings, SetFinding{State: str(), Rule: str(), Severity: str(), Subject: str(), Message: str(),
					ChangeSeq: rng.Uint64(), Time: times[rng.IntN(len(times))], OpenedAt: times[rng.IntN(len(times))], Reason: str()})
			}
		}
		if rng.IntN(2) == 0 {
			s.Opened = []int{0, rng.IntN(100)}
		}
		if rng.IntN(3) == 0 {
			s.Resolved = []int{}
		} else if rng.IntN(2) == 0 {
			s.Resolved = []int{rng.IntN(5)}
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.appendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("set %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// AppendEncode appends the body Encode returns to the buffer it is given,
// and its size hint covers the body of plain sets: one allocation.
func TestFindingSetAppendEncode(t *testing.T) {
	s := &FindingSet{Workload: Workload{Cluster: "prod", Namespace: "ns", APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-1"},
		ChangeSeq: 12345678901, Time: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600)), Opened: []int{0, 1}, Resolved: []int{2}}
	for _, rule := range []string{"model-unpinned", "image-digest", "runtime-version"} {
		s.Findings = append(s.Findings, SetFinding{State: FindingOpened, Rule: rule, Severity: "medium", Subject: "meta-llama/Llama-3.1-8B-Instruct",
			Message: "model meta-llama/Llama-3.1-8B-Instruct has no pinned revision or digest", ChangeSeq: 12345678901, Time: s.Time, OpenedAt: s.Time, Reason: "fixed"})
	}
	subj, want, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) > s.sizeHint() {
		t.Errorf("size hint %d under the body's %d bytes", s.sizeHint(), len(want))
	}
	subj2, got, err := s.AppendEncode([]byte("kept"))
	if err != nil || subj2 != subj || string(got) != "kept"+string(want) {
		t.Fatalf("AppendEncode = %q, %s, %v; want %q, kept%s", subj2, got, err, subj, want)
	}
	if _, _, err := (&FindingSet{}).AppendEncode(nil); err == nil {
		t.Error("a set without a workload encoded")
	}
}
