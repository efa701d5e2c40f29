package bustest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/owner"
)

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, "three calls", time.Minute, func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
	r := &fatalRecorder{TB: t}
	Eventually(r, "never", 20*time.Millisecond, func() bool { return false })
	if !strings.Contains(r.msg, "timed out after 20ms waiting for never") {
		t.Fatalf("a condition that never holds: %q", r.msg)
	}
}

// The bus Open gives is closed when its test ends: the data directory can
// be owned again.
func TestOpenClosesAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	t.Run("open", func(t *testing.T) {
		if b := Open(t, stream.Config{DataDir: dir}); !b.Embedded() {
			t.Fatal("not embedded")
		}
		if _, err := stream.Open(context.Background(), stream.Config{DataDir: dir}, nil); !errors.Is(err, owner.ErrInUse) {
			t.Fatalf("a second owner while the test runs: %v", err)
		}
	})
	Open(t, stream.Config{DataDir: dir})
}
