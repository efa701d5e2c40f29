package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/deadletter"
)

// Redrive goes through the engine: a handler that panics on the redriven
// message leaves the process up and the message a dead letter again with
// the panic as its reason (the old entry gone); transient failures are
// retried RedriveAttempts times; a mended handler takes it and the entry
// leaves; a dead letter of another stage is refused.
func TestRedriveThroughTheEngine(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	subj := schemas.SubjectBOMsPrefix + "t.w"
	m := nats.NewMsg(subj)
	m.Data = []byte("x")
	m.Header.Set("Bomstream-Workload", `{"cluster":"t"}`)
	if _, err := b.Writer().Publish(testContext(t), m, "id-x"); err != nil {
		t.Fatal(err)
	}
	var mode atomic.Value // "panic", "flaky", "ok"
	mode.Store("panic")
	var calls atomic.Int32
	var got atomic.Pointer[Msg]
	cfg := testEngineConfig("redrive")
	e := startEngine(t, b, cfg, func(ctx context.Context, m *Msg) error {
		calls.Add(1)
		switch mode.Load() {
		case "panic":
			var nilMap map[string]int
			nilMap["x"]++ // a real runtime panic
		case "flaky":
			return errors.New("503 from the store")
		}
		got.Store(m)
		return nil
	})
	waitUntil(t, "dead-lettered", func() bool { return len(deadLetters(t, b, cfg.Stage)) == 1 })
	first := deadLetters(t, b, cfg.Stage)[0]
	if !strings.Contains(first.Reason, "handler panicked") {
		t.Fatalf("first reason %q", first.Reason)
	}

	ctx := testContext(t)
	out, err := e.Redrive(ctx, first)
	if err != nil || out.Done || out.ID == first.ID || !strings.Contains(out.Reason, "handler panicked: assignment to entry in nil map") {
		t.Fatalf("redrive of a panicking handler: %+v %v", out, err)
	}
	dls := deadLetters(t, b, cfg.Stage)
	if len(dls) != 1 || dls[0].ID != out.ID || dls[0].Reason != out.Reason || string(dls[0].Data) != "x" ||
		dls[0].Subject != subj || dls[0].Seq != first.Seq || dls[0].Header.Get(jetstream.MsgIDHeader) != "id-x" ||
		dls[0].Header.Get("Bomstream-Workload") != `{"cluster":"t"}` {
		t.Fatalf("after the redrive: %+v (want only the new entry, same message)", dls)
	}

	mode.Store("flaky")
	before := calls.Load()
	out, err = e.Redrive(ctx, dls[0])
	if err != nil || out.Done || out.Reason != "after 3 attempts: 503 from the store" || calls.Load()-before != RedriveAttempts {
		t.Fatalf("redrive of a failing store: %+v %v, %d calls", out, err, calls.Load()-before)
	}

	mode.Store("ok")
	d := deadLetters(t, b, cfg.Stage)[0]
	out, err = e.Redrive(ctx, d)
	if err != nil || !out.Done {
		t.Fatalf("redrive once mended: %+v %v", out, err)
	}
	if n := len(deadLetters(t, b, cfg.Stage)); n != 0 {
		t.Fatalf("%d dead letters after a redrive that went through", n)
	}
	if m := got.Load(); m == nil || !m.Redelivered || m.Seq != first.Seq || string(m.Data) != "x" {
		t.Fatalf("the handler saw %+v", m)
	}
	d.Stage = "other"
	if _, err := e.Redrive(ctx, d); err == nil {
		t.Fatal("a dead letter of another stage was redriven")
	}
}

// A redrive waits for the engine's work on the same subject, and that
// work for it: one holder per subject, as Run keeps it. Other subjects
// are not held up.
func TestRedriveKeepsSubjectOrder(t *testing.T) {
	b := openEmbedded(t, stream.Config{})
	busy, other := schemas.SubjectBOMsPrefix+"t.busy", schemas.SubjectBOMsPrefix+"t.other"
	release := make(chan struct{})
	var inBusy atomic.Bool
	m := nats.NewMsg(busy)
	m.Data = []byte("live")
	if _, err := b.Writer().Publish(testContext(t), m, ""); err != nil {
		t.Fatal(err)
	}
	cfg := testEngineConfig("order")
	e := startEngine(t, b, cfg, func(ctx context.Context, m *Msg) error {
		if string(m.Data) == "live" {
			inBusy.Store(true)
			<-release
		}
		return nil
	})
	waitUntil(t, "the live message in the handler", inBusy.Load)

	// Dead letters as a stage would have parked them.
	park := func(subj string, seq uint64) deadletter.Letter {
		id, err := deadletter.New(b).Put(testContext(t), deadletter.Letter{Stage: cfg.Stage, Stream: cfg.Stream, Subject: subj, Data: []byte("dl"), Seq: seq, Header: nats.Header{}, Reason: "parked"}, deadletter.ID(cfg.Stage, cfg.Stream, seq))
		if err != nil {
			t.Fatal(err)
		}
		d, err := deadletter.New(b).Get(testContext(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	dBusy, dOther := park(busy, 100), park(other, 101)

	// Another subject goes through at once.
	if out, err := e.Redrive(testContext(t), dOther); err != nil || !out.Done {
		t.Fatalf("redrive of another subject: %+v %v", out, err)
	}
	// The busy subject waits for the live message.
	done := make(chan Redriven, 1)
	go func() {
		out, err := e.Redrive(testContext(t), dBusy)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	select {
	case out := <-done:
		t.Fatalf("the redrive ran beside the live message of its subject: %+v", out)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case out := <-done:
		if !out.Done {
			t.Fatalf("redrive after the live message: %+v", out)
		}
	case <-time.After(time.Minute):
		t.Fatal("the redrive never ran")
	}
	// A redrive that cannot get its subject before ctx ends changes nothing.
	l, _ := e.subjects.lock(context.Background(), busy)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	d := park(busy, 102)
	if _, err := e.Redrive(ctx, d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("redrive with the subject held: %v", err)
	}
	e.subjects.unlock(busy, l)
	if _, err := deadletter.New(b).Get(testContext(t), d.ID); err != nil {
		t.Fatalf("the dead letter after a redrive that timed out: %v", err)
	}
}
