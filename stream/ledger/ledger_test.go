package ledger_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/ledger"
)

// Put is conditional on the revision read, All loads every entry, and
// Names lists the sinks that have a ledger.
func TestLedgerConditionalWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bus := bustest.Open(t, stream.Config{})
	l, err := ledger.Open(ctx, bus, "files")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := l.Get(ctx, "w.dev.u1"); ok || err != nil {
		t.Fatalf("get of a new key: ok %v, %v", ok, err)
	}
	rev, err := l.Put(ctx, "w.dev.u1", []byte("1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, "w.dev.u1", []byte("other"), 0); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("create over an entry: %v, want ErrConflict", err)
	}
	if _, err := l.Put(ctx, "w.dev.u1", []byte("2"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, "w.dev.u1", []byte("stale"), rev); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
	}
	if v, _, ok, err := l.Get(ctx, "w.dev.u1"); !ok || err != nil || string(v) != "2" {
		t.Fatalf("get: %q ok %v, %v", v, ok, err)
	}
	got := map[string]string{}
	if err := l.All(ctx, func(k string, v []byte, _ uint64) { got[k] = string(v) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["w.dev.u1"] != "2" {
		t.Fatalf("all: %v", got)
	}
	if _, err := ledger.Open(ctx, bus, "archive"); err != nil {
		t.Fatal(err)
	}
	names, err := ledger.Names(ctx, bus)
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"archive", "files"}) {
		t.Fatalf("names %v, %v", names, err)
	}
}
