package sinks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

func TestPermanent(t *testing.T) {
	base := errors.New("bad request")
	p := sinks.Permanent(base)
	if !sinks.IsPermanent(p) || !sinks.IsPermanent(fmt.Errorf("upload: %w", p)) {
		t.Fatal("permanent error not recognised through wrapping")
	}
	if !errors.Is(p, base) || p.Error() != "bad request" {
		t.Fatalf("Permanent hides its cause: %v", p)
	}
	if sinks.IsPermanent(base) || sinks.IsPermanent(nil) || sinks.Permanent(nil) != nil {
		t.Fatal("plain and nil errors must not be permanent")
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"file", "gcs-prod", "a_1"} {
		if err := sinks.ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "-x", "a*", "a>"} {
		if err := sinks.ValidateName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDecodeConfigIsStrict(t *testing.T) {
	var cfg struct {
		Dir string `json:"dir"`
	}
	if err := sinks.DecodeConfig(map[string]any{"dir": "x"}, &cfg); err != nil || cfg.Dir != "x" {
		t.Fatalf("got %+v, %v", cfg, err)
	}
	err := sinks.DecodeConfig(map[string]any{"dir": "x", "bucket": "y"}, &cfg)
	if err == nil || err.Error() != `config: json: unknown field "bucket"` {
		t.Fatalf("got %v", err)
	}
	if err := sinks.DecodeConfig(map[string]any{"dir": 3}, &cfg); err == nil {
		t.Fatal("a number decoded into a string field")
	}
}

type recording struct {
	sinks.Sink
	calls int
}

func (r *recording) Name() string { return "real" }
func (r *recording) Export(context.Context, sinks.BOM) error {
	r.calls++
	return nil
}
func (r *recording) Tombstone(context.Context, sinks.Tombstone) error {
	r.calls++
	return nil
}
func (r *recording) Close() error { return nil }

func TestDryRunWritesNothing(t *testing.T) {
	inner := &recording{}
	d := sinks.DryRun(inner, nil)
	if d.Name() != "real-dryrun" {
		t.Fatalf("name %q", d.Name())
	}
	w := sinktest.Workload("w")
	if err := d.Export(context.Background(), sinktest.NewBOM(w, 1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Tombstone(context.Background(), sinktest.NewTombstone(w, 2)); err != nil {
		t.Fatal(err)
	}
	if inner.calls != 0 {
		t.Fatalf("dry run reached the sink %d times", inner.calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Export(ctx, sinktest.NewBOM(w, 3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
