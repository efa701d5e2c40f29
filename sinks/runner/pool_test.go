package runner

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// poolMsg is a message with a subject and a number; the pool looks at
// nothing else.
type poolMsg struct {
	jetstream.Msg
	subject string
	n       int
}

func (m poolMsg) Subject() string { return m.subject }

// A workload whose message is stuck holds back only its own later messages:
// the other workloads' messages reach the free worker.
func TestPoolBusySubjectDoesNotBlockOthers(t *testing.T) {
	release := make(chan struct{})
	handled := make(chan poolMsg, 100)
	p := newPool(2, func(m jetstream.Msg, done func()) {
		defer done()
		pm := m.(poolMsg)
		if pm.subject == "stuck" && pm.n == 0 {
			<-release
		}
		handled <- pm
	})
	p.submit(poolMsg{subject: "stuck", n: 0})
	p.submit(poolMsg{subject: "stuck", n: 1})
	// Up to the pool's bound (2 per worker) while "stuck" holds one worker.
	p.submit(poolMsg{subject: "a", n: 0})
	p.submit(poolMsg{subject: "b", n: 0})
	for range 2 {
		select {
		case m := <-handled:
			if m.subject == "stuck" {
				t.Fatalf("message %d of the stuck subject handled before the first one finished", m.n)
			}
		case <-time.After(time.Minute):
			t.Fatal("the other subjects' messages waited behind the stuck one")
		}
	}
	close(release)
	p.close()
	close(handled)
	var stuck []int
	for m := range handled {
		stuck = append(stuck, m.n)
	}
	if fmt.Sprint(stuck) != "[0 1]" {
		t.Fatalf("stuck subject handled as %v, want [0 1]", stuck)
	}
}

// Every message is handled exactly once, each subject's in submission order,
// and never two of one subject at the same time.
func TestPoolKeepsEachSubjectsOrder(t *testing.T) {
	const subjects, per = 7, 50
	var (
		mu     sync.Mutex
		seen   = map[string][]int{}
		active = map[string]bool{}
	)
	p := newPool(3, func(m jetstream.Msg, done func()) {
		defer done()
		pm := m.(poolMsg)
		mu.Lock()
		if active[pm.subject] {
			t.Errorf("two messages of %s handled at once", pm.subject)
		}
		active[pm.subject] = true
		mu.Unlock()
		time.Sleep(time.Duration(pm.n%3) * time.Millisecond)
		mu.Lock()
		active[pm.subject] = false
		seen[pm.subject] = append(seen[pm.subject], pm.n)
		mu.Unlock()
	})
	for n := range per {
		for s := range subjects {
			p.submit(poolMsg{subject: fmt.Sprint("s", s), n: n})
		}
	}
	p.close()
	for s := range subjects {
		got := seen[fmt.Sprint("s", s)]
		if len(got) != per {
			t.Fatalf("s%d: %d messages handled, want %d", s, len(got), per)
		}
		for i, n := range got {
			if n != i {
				t.Fatalf("s%d handled out of order: %v", s, got)
			}
		}
	}
}

// A message released after handle returned still counts against the bound,
// and close waits for its release.
func TestPoolCloseWaitsForLateRelease(t *testing.T) {
	late := make(chan struct{})
	p := newPool(1, func(m jetstream.Msg, done func()) {
		go func() {
			<-late
			done()
		}()
	})
	p.submit(poolMsg{subject: "a"})
	p.submit(poolMsg{subject: "b"}) // the second of the bound of 2; the release of "a" is pending
	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned before the messages were released")
	case <-time.After(100 * time.Millisecond):
	}
	close(late)
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("close did not return after every message was released")
	}
}
