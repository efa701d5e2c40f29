package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

var _ sinks.Locator = (*Sink)(nil)

// assertHolds fails unless every location is a file holding body.
func assertHolds(t *testing.T, locs []sinks.Location, body []byte) {
	t.Helper()
	for _, l := range locs {
		got, err := os.ReadFile(l.Where)
		if err != nil {
			t.Errorf("%s %s: %v", l.What, l.Where, err)
			continue
		}
		if !bytes.Equal(got, body) {
			t.Errorf("%s %s holds other bytes than the BOM", l.What, l.Where)
		}
	}
}

// Locate names the files Export wrote: the version's, and latest.cdx.json
// for the current version only.
func TestLocate(t *testing.T) {
	s := newSink(t)
	w := sinktest.Workload("chat")
	old, cur := sinktest.NewBOM(w, 1), sinktest.NewBOM(w, 2)
	for _, b := range []sinks.BOM{old, cur} {
		if err := s.Export(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	locs := s.Locate(sinktest.Version(old, false))
	if len(locs) != 1 || locs[0].What != "file" || locs[0].Type != "file" || locs[0].Sink != "file" || locs[0].URL != "" || locs[0].Note != "" {
		t.Fatalf("an older version: %+v, want its file, with no note (the tree is absolute)", locs)
	}
	assertHolds(t, locs, old.Body)
	locs = s.Locate(sinktest.Version(cur, true))
	if len(locs) != 2 || locs[0].What != "file" || locs[1].What != "latest file" || filepath.Base(locs[1].Where) != LatestFile {
		t.Fatalf("the current version: %+v, want its file and %s", locs, LatestFile)
	}
	assertHolds(t, locs, cur.Body)

	tomb := sinktest.Version(cur, true)
	tomb.BomHash = ""
	if locs := s.Locate(tomb); locs != nil {
		t.Errorf("a tombstone: %+v, want none", locs)
	}
	if locs := s.Locate(sinktest.Version(sinktest.NewBOM(sinktest.Workload(".."), 3), true)); locs != nil {
		t.Errorf("a workload Export refuses: %+v, want none", locs)
	}
}

// A relative tree is named as configured, and the note says relative to
// what.
func TestLocateRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := New(Config{Name: "archive", Dir: "boms"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	locs := s.Locate(sinktest.Version(b, true))
	if len(locs) != 2 {
		t.Fatalf("locations %+v", locs)
	}
	for _, l := range locs {
		if filepath.IsAbs(l.Where) || l.Sink != "archive" || l.Note != "relative to the working directory of the process running sink archive" {
			t.Errorf("%+v: want a relative path with a note", l)
		}
	}
	assertHolds(t, locs, b.Body)
}
