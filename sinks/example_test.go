package sinks_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/registry"
)

// countConfig is the `config:` block of the example's sink type.
type countConfig struct {
	Prefix string `yaml:"prefix"`
}

// Validate names the key at fault, without I/O.
func (c *countConfig) Validate() error {
	if c.Prefix == "" {
		return errors.New("prefix: required")
	}
	return nil
}

// countSink prints what it would store. Export and Tombstone are
// idempotent, as the contract asks.
type countSink struct {
	name, prefix string
}

func (s *countSink) Name() string { return s.name }

func (s *countSink) Export(_ context.Context, b sinks.BOM) error {
	fmt.Printf("%s%s/%s version %d\n", s.prefix, b.Workload.Namespace, b.Workload.Name, b.ChangeSeq)
	return nil
}

func (s *countSink) Tombstone(_ context.Context, t sinks.Tombstone) error {
	fmt.Printf("%s%s/%s %s\n", s.prefix, t.Workload.Namespace, t.Workload.Name, t.Reason)
	return nil
}

func (s *countSink) Close() error { return nil }

// Register a sink type: a registry maps the `type:` of a sink entry to how
// its `config:` block is decoded (strictly: an unknown key is an error) and
// how the sink is built. The runner then drives it from BOMS with a ledger,
// retries and dead letters; here it is called by hand.
func ExampleRegistry() {
	reg := registry.Builtin()
	reg["count"] = sinks.Type{
		NewConfig: func() sinks.Config { return &countConfig{} },
		New: func(_ context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			return &countSink{name: deps.Name, prefix: cfg.(*countConfig).Prefix}, nil
		},
	}
	if _, err := reg.Decode("count", map[string]any{"prefx": "inventory/"}); err != nil {
		fmt.Println("error:", err)
	}
	cfg, err := reg.Decode("count", map[string]any{"prefix": "inventory/"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	s, err := reg.New(ctx, "count", "audit", cfg, sinks.Deps{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	w := schemas.Workload{Cluster: "dev", Namespace: "ml", Kind: "InferenceService", Name: "summarizer", UID: "u1"}
	_ = s.Export(ctx, sinks.BOM{Workload: w, ChangeSeq: 7})
	_ = s.Tombstone(ctx, sinks.Tombstone{Workload: w, Reason: sinks.ReasonDeleted, ChangeSeq: 9})
	// Output:
	// error: unknown key "prefx" (known: prefix)
	// inventory/ml/summarizer version 7
	// inventory/ml/summarizer deleted
}
