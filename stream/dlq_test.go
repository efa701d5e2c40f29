package stream

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

func TestDeadLetterKeepsMessageAndReason(t *testing.T) {
	b := openEmbedded(t, Config{})
	ctx := testContext(t)
	hdr := nats.Header{}
	hdr.Set("Bomstream-Workload", `{"cluster":"dev"}`)
	hdr.Set(jetstream.MsgIDHeader, "dev:u1:7")
	hdr.Set(jetstream.ExpectedLastSubjSeqHeader, "7")
	hdr.Set(HeaderDLQSubject, "bomstream.changes.dev.u1")
	hdr.Set(HeaderDLQSeq, "8")
	reason := "render dev/ml/Deployment/x:\nline two " + strings.Repeat("é", 800)
	if err := b.DeadLetter(ctx, "transformer", []byte("{not json"), hdr, reason); err != nil {
		t.Fatal(err)
	}
	// Dead letters are never deduplicated: the same failure twice is kept twice.
	if err := b.DeadLetter(ctx, "transformer", []byte("{not json"), hdr, reason); err != nil {
		t.Fatal(err)
	}
	s, err := b.JS.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 2 {
		t.Fatalf("DLQ holds %d messages, want 2", n)
	}
	m, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != schemas.DLQSubject("transformer") || string(m.Data) != "{not json" {
		t.Fatalf("dead letter %s %q", m.Subject, m.Data)
	}
	for k, want := range map[string]string{
		"Bomstream-Workload": `{"cluster":"dev"}`,
		HeaderDLQMsgID:       "dev:u1:7",
		HeaderDLQSubject:     "bomstream.changes.dev.u1",
		HeaderDLQSeq:         "8",
	} {
		if got := m.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if m.Header.Get(jetstream.ExpectedLastSubjSeqHeader) != "" || m.Header.Get(jetstream.MsgIDHeader) != "" {
		t.Errorf("JetStream control headers were copied: %v", m.Header)
	}
	got := m.Header.Get(schemas.HeaderReason)
	if len(got) > MaxReasonBytes || !utf8.ValidString(got) || strings.ContainsAny(got, "\r\n") {
		t.Fatalf("reason is %d bytes, valid utf-8 %v, one line %v", len(got), utf8.ValidString(got), !strings.ContainsAny(got, "\r\n"))
	}
	if !strings.HasPrefix(got, "render dev/ml/Deployment/x: line two é") || !strings.HasSuffix(got, "...") {
		t.Fatalf("reason %q", got)
	}
	if hdr.Get(schemas.HeaderReason) != "" {
		t.Fatal("DeadLetter modified the caller's headers")
	}
}

func TestDeadLetterMsgRecordsSourceSubjectAndSeq(t *testing.T) {
	b := openEmbedded(t, Config{})
	ctx := testContext(t)
	subj := schemas.ChangesSubject(testWorkload("u9"))
	for _, d := range []string{"first", "second"} {
		if _, err := b.JS.Publish(ctx, subj, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := b.JS.OrderedConsumer(ctx, schemas.StreamChanges, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.DeadLetterMsg(ctx, "sink-file", msg, "boom"); err != nil {
		t.Fatal(err)
	}
	m, err := b.JS.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.GetLastMsgForSubject(ctx, schemas.DLQSubject("sink-file"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Get(HeaderDLQSubject) != subj || got.Header.Get(HeaderDLQSeq) != "2" || string(got.Data) != "second" || got.Header.Get(schemas.HeaderReason) != "boom" {
		t.Fatalf("dead letter %q headers %v", got.Data, got.Header)
	}
}

func TestDeadLetterRejectsBadStage(t *testing.T) {
	b := openEmbedded(t, Config{})
	for _, stage := range []string{"", "a.b", "*", "x y"} {
		if err := b.DeadLetter(testContext(t), stage, nil, nil, "r"); err == nil {
			t.Errorf("stage %q accepted", stage)
		}
	}
}

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
