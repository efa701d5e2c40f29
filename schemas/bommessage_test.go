package schemas

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func testBOMMessage() BOMMessage {
	return BOMMessage{
		Workload:  Workload{Cluster: "prod", UID: "u-1", Namespace: "ml", Kind: "Deployment", Name: "chat"},
		ChangeSeq: 42,
		EventTime: time.Date(2026, 1, 2, 3, 4, 5, 123000000, time.UTC),
		BomHash:   BomHash([]byte(`{"bomFormat":"CycloneDX"}`)),
		InputHash: "sha256:in",
		Images:    []ImageDigest{{Image: "vllm/vllm-openai:v0.10.1", Digest: "sha256:" + strings.Repeat("a", 64)}},
		BOM:       []byte(`{"bomFormat":"CycloneDX"}`),
	}
}

// A BOM and a tombstone go through Encode and DecodeBOMMessage unchanged,
// with their subject and message id; a tombstone's body is the workload.
func TestBOMMessageRoundTrip(t *testing.T) {
	bom := testBOMMessage()
	ts := BOMMessage{Workload: bom.Workload, ChangeSeq: 43, EventTime: bom.EventTime, Tombstone: TombstoneNotServing}
	for _, m := range []BOMMessage{bom, ts} {
		h, body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if h[HeaderMsgID][0] != BOMMsgID(m.Workload, m.ChangeSeq) || m.Subject() != "bomstream.boms.prod.u-1" {
			t.Fatalf("msg id %v, subject %s", h[HeaderMsgID], m.Subject())
		}
		got, err := DecodeBOMMessage(m.Subject(), h, body)
		if err != nil {
			t.Fatal(err)
		}
		if m.IsTombstone() {
			m.BOM = body // the workload's JSON
			got.BOM = body
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
	// A tombstone without a reason was a deletion (older writers).
	h, body, _ := ts.Encode()
	delete(h, HeaderTombstoneReason)
	if got, err := DecodeBOMMessage("", h, body); err != nil || got.Tombstone != TombstoneDeleted {
		t.Fatalf("tombstone without reason: %+v %v", got, err)
	}
}

// Every defect is named, and what could be read is still there for the
// tools that list and check.
func TestDecodeBOMMessageNamesEachDefect(t *testing.T) {
	good := testBOMMessage()
	for _, tc := range []struct {
		name  string
		edit  func(h map[string][]string, body *[]byte)
		subj  string
		wants []string
	}{
		{"change seq", func(h map[string][]string, _ *[]byte) { h[HeaderChangeSeq] = []string{"x"} }, "", []string{HeaderChangeSeq}},
		{"zero change seq", func(h map[string][]string, _ *[]byte) { h[HeaderChangeSeq] = []string{"0"} }, "", []string{HeaderChangeSeq}},
		{"no change seq", func(h map[string][]string, _ *[]byte) { delete(h, HeaderChangeSeq) }, "", []string{HeaderChangeSeq}},
		{"bom hash", func(h map[string][]string, _ *[]byte) { h[HeaderBomHash] = []string{"md5:1"} }, "", []string{HeaderBomHash}},
		{"input hash", func(h map[string][]string, _ *[]byte) { delete(h, HeaderInputHash) }, "", []string{HeaderInputHash}},
		{"workload", func(h map[string][]string, _ *[]byte) { h[HeaderWorkload] = []string{`{"cluster":"prod"}`} }, "", []string{"identity incomplete"}},
		{"event time", func(h map[string][]string, _ *[]byte) { h[HeaderEventTime] = []string{"yesterday"} }, "", []string{HeaderEventTime}},
		{"images", func(h map[string][]string, _ *[]byte) { h[HeaderImages] = []string{"[{"} }, "", []string{HeaderImages}},
		{"empty body", func(_ map[string][]string, b *[]byte) { *b = nil }, "", []string{"empty body"}},
		{"subject", func(map[string][]string, *[]byte) {}, "bomstream.boms.prod.other", []string{"does not match workload"}},
		{"tombstone reason", func(h map[string][]string, b *[]byte) {
			h[HeaderTombstone], h[HeaderTombstoneReason] = []string{"true"}, []string{"gone fishing"}
			*b, _ = CanonicalJSON(good.Workload)
		}, "", []string{HeaderTombstoneReason}},
		{"tombstone body", func(h map[string][]string, _ *[]byte) {
			h[HeaderTombstone] = []string{"true"}
		}, "", []string{"tombstone body: workload identity incomplete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := good.Encode()
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(h, &body)
			got, err := DecodeBOMMessage(tc.subj, h, body)
			if err == nil {
				t.Fatalf("decoded %+v without an error", got)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if tc.name != "workload" && got.Workload.Name != "chat" {
				t.Errorf("the workload was not read: %+v", got.Workload)
			}
		})
	}
	// Encode refuses what Decode would.
	bad := good
	bad.ChangeSeq = 0
	if _, _, err := bad.Encode(); err == nil {
		t.Fatal("encoded a message with no change sequence")
	}
}

// Only the codec writes and reads the BOMS headers: no other Go file of the
// module (tests aside, which build malformed messages) names them.
func TestBOMSHeadersOnlyInTheCodec(t *testing.T) {
	names := regexp.MustCompile(`Bomstream-(Bom-Hash|Change-Seq|Workload|Tombstone|Event-Time|Images)|schemas\.Header(BomHash|ChangeSeq|Workload|Tombstone|TombstoneReason|EventTime|Images)\b`)
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.ToSlash(p) == "../schemas/bommessage.go" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if m := names.Find(b); m != nil {
			t.Errorf("%s names the BOMS header %s: read and write BOMS messages with schemas.BOMMessage", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
