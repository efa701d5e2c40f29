package stream

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

func TestMessagesIteratesFilterToTheEndAsOfTheCall(t *testing.T) {
	b := openEmbedded(t, Config{})
	ctx := testContext(t)
	w1, w2 := testWorkload("u1"), testWorkload("u2")
	// seq 1..6 alternate between the two workloads.
	for i := range 6 {
		w := w1
		if i%2 == 1 {
			w = w2
		}
		if _, err := b.js.Publish(ctx, schemas.ChangesSubject(w), fmt.Appendf(nil, "m%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	collect := func(subject string, from uint64) []string {
		t.Helper()
		var got []string
		err := b.Reader().Messages(ctx, schemas.StreamChanges, subject, from, func(m *jetstream.RawStreamMsg) error {
			got = append(got, fmt.Sprintf("%d:%s", m.Sequence, m.Data))
			if m.Time.IsZero() || m.Subject == "" {
				return fmt.Errorf("message %d lacks time or subject", m.Sequence)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range []struct {
		subject string
		from    uint64
		want    string
	}{
		{schemas.ChangesSubject(w1), 0, "[1:m1 3:m3 5:m5]"},
		{schemas.ChangesSubject(w2), 3, "[4:m4 6:m6]"},
		{"", 5, "[5:m5 6:m6]"},
		{schemas.SubjectChangesPrefix + "dev.*", 0, "[1:m1 2:m2 3:m3 4:m4 5:m5 6:m6]"},
		{schemas.ChangesSubject(w1), 6, "[]"},
		{schemas.ChangesSubject(testWorkload("none")), 0, "[]"},
	} {
		if got := fmt.Sprint(collect(c.subject, c.from)); got != c.want {
			t.Errorf("Messages(%q, from %d) = %s, want %s", c.subject, c.from, got, c.want)
		}
	}

	// Appends during the iteration are not visited: it ends where the
	// stream ended when it began.
	n := 0
	err := b.Reader().Messages(ctx, schemas.StreamChanges, schemas.ChangesSubject(w1), 0, func(m *jetstream.RawStreamMsg) error {
		n++
		_, err := b.js.Publish(ctx, schemas.ChangesSubject(w1), []byte("later"))
		return err
	})
	if err != nil || n != 3 {
		t.Fatalf("iteration with appends visited %d messages (err %v), want 3", n, err)
	}

	// ErrStop ends early without error; another error is returned.
	n = 0
	if err := b.Reader().Messages(ctx, schemas.StreamChanges, "", 0, func(*jetstream.RawStreamMsg) error { n++; return ErrStop }); err != nil || n != 1 {
		t.Fatalf("ErrStop: visited %d, err %v", n, err)
	}
	boom := errors.New("boom")
	if err := b.Reader().Messages(ctx, schemas.StreamChanges, "", 0, func(*jetstream.RawStreamMsg) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("callback error: got %v", err)
	}
	if err := b.Reader().Messages(ctx, "NOPE", "", 0, func(*jetstream.RawStreamMsg) error { return nil }); err == nil {
		t.Fatal("unknown stream: no error")
	}
}
