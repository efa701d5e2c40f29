package stream

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

func TestStateNamesLostSequences(t *testing.T) {
	b := openEmbedded(t, Config{})
	ctx := testContext(t)
	w := testWorkload("u1")
	for i := range 10 {
		if _, err := b.js.Publish(ctx, schemas.BOMsSubject(w), fmt.Appendf(nil, "m%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.Stream(ctx, schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, 3, 4, 5, 8, 10} {
		if err := s.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	st, err := b.Reader().State(ctx, schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	// 1 and 10 went from the ends: the stream starts at 2; the last
	// sequence stays 10, so 10 is a lost message too.
	if st.Msgs != 4 || st.FirstSeq != 2 || st.LastSeq != 10 || st.Lost.String() != "3-5, 8, 10" || st.Lost.Len() != 5 {
		t.Errorf("State = %+v (lost %s), want 4 messages 2..10, lost 3-5, 8, 10", st, st.Lost)
	}
	if got := st.Lost.Within(4, 9).String(); got != "4-5, 8" {
		t.Errorf("Within(4, 9) = %s", got)
	}
	for seq, want := range map[uint64]bool{2: false, 3: true, 5: true, 6: false, 8: true, 9: false, 10: true, 11: false} {
		if st.Lost.Contains(seq) != want {
			t.Errorf("Contains(%d) = %v", seq, !want)
		}
	}
	empty, err := b.Reader().State(ctx, schemas.StreamChanges)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Msgs != 0 || len(empty.Lost) != 0 {
		t.Errorf("empty stream: %+v", empty)
	}
}

func TestRangesWithout(t *testing.T) {
	rs := Ranges{{3, 10}, {20, 20}, {30, 40}}
	for _, c := range []struct {
		other Ranges
		want  string
	}{
		{nil, "3-10, 20, 30-40"},
		{Ranges{{3, 10}}, "20, 30-40"},
		{Ranges{{5, 6}, {20, 35}}, "3-4, 7-10, 36-40"},
		{Ranges{{1, 100}}, ""},
	} {
		if got := rs.Without(c.other).String(); got != c.want {
			t.Errorf("%s without %s = %q, want %q", rs, c.other, got, c.want)
		}
	}
}

// The server answers "not found" to the last message of ">" when the
// stream's last sequence was lost; Messages still reads what is there.
func TestMessagesWhenTheLastMessageWasLost(t *testing.T) {
	b := openEmbedded(t, Config{})
	ctx := testContext(t)
	for i := range 3 {
		if _, err := b.js.Publish(ctx, schemas.BOMsSubject(testWorkload("u1")), fmt.Appendf(nil, "m%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.Stream(ctx, schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 3); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	if err := b.Reader().Messages(ctx, schemas.StreamBOMs, "", 0, func(m *jetstream.RawStreamMsg) error {
		got = append(got, m.Sequence)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Errorf("Messages read %v, want [1 2]", got)
	}
}
