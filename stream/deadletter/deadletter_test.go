package deadletter

import (
	"strings"
	"testing"
)

func TestReasonIsOneBoundedLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"short", "short"},
		{"a\r\nb\tc", "a  b c"},
		{"bad \xff byte", "bad ? byte"},
	} {
		if got := Reason(c.in); got != c.want {
			t.Errorf("Reason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("x", 5000)
	if got := Reason(long); len(got) != MaxReasonBytes || !strings.HasSuffix(got, "...") {
		t.Errorf("long reason is %d bytes", len(got))
	}
}
