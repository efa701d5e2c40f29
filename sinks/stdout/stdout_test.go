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

// lockedBuffer is a bytes.Buffer safe for the concurrent part of the suite.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
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

// inspect reads the printed lines of w: distinct BOMs, the last BOM printed,
// and whether the last line about w is a tombstone.
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
			st.Latest = l.BomHash
			st.Tombstoned = false
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
	notJSON := sinktest.NewBOM(sinktest.Workload("not-json"), 1)
	notJSON.Body = []byte("{not json")
	sinktest.Run(t, newSink, sinktest.Options{Inspect: inspect, Invalid: []sinks.BOM{notJSON}})
}

func TestOneLinePerDistinctCall(t *testing.T) {
	ctx := context.Background()
	s := newSink(t).(testSink)
	w := sinktest.Workload("lines")
	b := sinktest.NewBOM(w, 1)
	for i := 0; i < 3; i++ {
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	ts := sinktest.NewTombstone(w, 2)
	for i := 0; i < 3; i++ {
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

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriteErrorIsTransientAndRetried(t *testing.T) {
	s, err := New(Config{Writer: failingWriter{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := sinktest.NewBOM(sinktest.Workload("w"), 1)
	err = s.Export(context.Background(), b)
	if err == nil || sinks.IsPermanent(err) {
		t.Fatalf("got %v, want a transient error", err)
	}
	// The failed write is not remembered as printed.
	s.w = &bytes.Buffer{}
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if s.w.(*bytes.Buffer).Len() == 0 {
		t.Fatal("retried export printed nothing")
	}
}

func TestSinkTypeDecodesStrictly(t *testing.T) {
	reg := sinks.Registry{Type: SinkType}
	if _, err := reg.Decode(Type, map[string]any{"pretty": true}); err == nil || !strings.Contains(err.Error(), `"pretty"`) {
		t.Fatalf("got %v, want an error naming the unknown key", err)
	}
	cfg, err := reg.Decode(Type, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	reg[Type] = TypeFor(&buf)
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
