package stdout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// lockedBuffer is a bytes.Buffer safe for the concurrent part of the
// suite; while broken, its writes fail as a closed pipe's do.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	broken bool
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken {
		return 0, errors.New("write |1: broken pipe")
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) setBroken(broken bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.broken = broken
}

func (l *lockedBuffer) lines(t *testing.T) []Line {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Line
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line Line
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, line)
	}
	return out
}

type testSink struct {
	*Sink
	out *lockedBuffer
}

func newSink(t *testing.T) sinks.Sink {
	out := &lockedBuffer{}
	s, err := New(Config{Writer: out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return testSink{Sink: s, out: out}
}

// inspect reads the printed lines of w: distinct BOMs, the last BOM printed
// that is not superseded, and whether a tombstone came after it.
func inspect(t *testing.T, s sinks.Sink, w schemas.Workload) sinktest.Stored {
	var st sinktest.Stored
	distinct := map[string]bool{}
	for _, l := range s.(testSink).out.lines(t) {
		if l.Workload != w {
			continue
		}
		switch l.Type {
		case "bom":
			if schemas.BomHash(l.BOM) != l.BomHash {
				t.Errorf("printed bom does not hash to %s", l.BomHash)
			}
			distinct[l.BomHash] = true
			if !l.Superseded {
				st.Latest, st.Tombstoned = l.BomHash, false
			}
		case "tombstone":
			st.Tombstoned = true
		default:
			t.Errorf("line type %q", l.Type)
		}
	}
	st.BOMs = len(distinct)
	return st
}

func TestConformance(t *testing.T) {
	sinktest.Run(t, newSink, sinktest.Options{
		Inspect: inspect,
		// The store is the output stream: down, its writes fail.
		Outage: func(_ *testing.T, s sinks.Sink, down bool) { s.(testSink).out.setBroken(down) },
		Type:   SinkType,
		// Nothing to look at before lines are written: a closed pipe shows
		// on the first write.
		NoChecker: "standard output has nothing to check before the first line",
	})
}

// A superseded BOM is printed, marked: a reader of the stream knows it for
// history.
func TestSupersededIsMarked(t *testing.T) {
	s := newSink(t).(testSink)
	w := sinktest.Workload("late")
	old := sinktest.NewBOM(w, 1)
	old.Superseded = true
	if err := s.Export(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if lines := s.out.lines(t); len(lines) != 1 || !lines[0].Superseded || !strings.Contains(s.out.b.String(), `"superseded":true`) {
		t.Fatalf("got %s, want one line marked superseded", s.out.b.String())
	}
}

func TestOneLinePerDistinctCall(t *testing.T) {
	ctx := context.Background()
	s := newSink(t).(testSink)
	w := sinktest.Workload("lines")
	b := sinktest.NewBOM(w, 1)
	for range 3 {
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	ts := sinktest.NewTombstone(w, 2)
	for range 3 {
		if err := s.Tombstone(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
	lines := s.out.lines(t)
	if len(lines) != 2 || lines[0].Type != "bom" || lines[1].Type != "tombstone" || lines[1].ChangeSeq != 2 {
		t.Fatalf("got %+v, want one bom line and one tombstone line", lines)
	}
	raw := s.out.b.String()
	if strings.Count(raw, "\n") != 2 || strings.Contains(strings.Split(raw, "\n")[0], "\n") {
		t.Fatalf("output is not two lines: %q", raw)
	}
}

// TypeFor's sinks write to the given writer, under the registry's name.
func TestTypeForWriter(t *testing.T) {
	var buf bytes.Buffer
	reg := sinks.Registry{Type: TypeFor(&buf)}
	cfg, err := reg.Decode(Type, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reg.New(context.Background(), Type, "out", cfg, sinks.Deps{})
	if err != nil || s.Name() != "out" {
		t.Fatalf("got %v, %v", s, err)
	}
	if err := s.Export(context.Background(), sinktest.NewBOM(sinktest.Workload("w"), 1)); err != nil {
		t.Fatal(err)
	}
	if buf.Len() == 0 {
		t.Fatal("TypeFor's writer received nothing")
	}
}
