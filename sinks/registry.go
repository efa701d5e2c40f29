package sinks

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/config"
)

// Config is the configuration of one sink type: a struct (used through a
// pointer) with yaml tags, decoded strictly from the sink's `config:` block.
// Validate checks it without any I/O and names the key at fault.
type Config interface {
	Validate() error
}

// Deps is what a sink gets from the process that runs it.
type Deps struct {
	// Name of the sink instance (unique in the configuration).
	Name string
	// Log is scoped to the sink already.
	Log *zap.Logger
	// Metrics is where the sink registers its own metrics; nil registers none.
	Metrics prometheus.Registerer
	// Getenv reads the environment, for credentials named by an *Env key
	// (see ReadSecret). Nil means os.Getenv is not consulted: no variable is set.
	Getenv func(string) string
	// SpecVersion is the CycloneDX version of the bodies the sink gets:
	// Spec16 ("" too), or Spec17 when its entry says specVersion: "1.7"
	// (Registry.New then converts them; see WithSpecVersion). A sink reads
	// it to label what it writes and to check that its store takes it.
	SpecVersion string
}

// Type is one kind of sink: how its configuration is read and how it is built.
type Type struct {
	// NewConfig returns a pointer to a new configuration holding the type's
	// defaults; Decode fills it from YAML.
	NewConfig func() Config
	// New builds a sink from a configuration that Decode returned. It runs
	// after the whole process configuration was validated. It may open
	// clients but must not fail because the store is unreachable right now:
	// Checker and the runner's retries deal with that.
	New func(ctx context.Context, cfg Config, deps Deps) (Sink, error)
	// LatestOnly is the runner's default for sinks of this type that keep
	// only a workload's current state (Dependency-Track), unless the sink's
	// runner configuration says otherwise.
	LatestOnly bool
	// Concurrency is the runner's default number of exports at once for
	// sinks of this type, unless the sink's runner configuration sets one;
	// zero means the engine's default (engine.DefaultConcurrency).
	Concurrency int
}

// Registry maps a sink type name ("file", "gcs", ...) to its Type. Build one
// explicitly (see sinks/registry.Builtin) and pass it where sinks are made.
type Registry map[string]Type

// Types lists the registered sink types, sorted.
func (r Registry) Types() []string {
	out := make([]string, 0, len(r))
	for k := range r {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Decode reads the configuration block raw (as decoded from YAML: maps,
// lists, strings, numbers; durations may be written "30s") of a sink of type
// typ, strictly, and validates it. Errors name keys relative to the block
// ("bucket: required", `unknown key "bukcet"`); callers prefix the path of the
// block (sinks[0].config).
func (r Registry) Decode(typ string, raw map[string]any) (Config, error) {
	t, ok := r[typ]
	if !ok {
		return nil, fmt.Errorf("unknown sink type %q (known: %s)", typ, strings.Join(r.Types(), ", "))
	}
	cfg := t.NewConfig()
	if err := DecodeConfig(raw, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// New builds the sink called name of type typ from cfg, a configuration that
// Decode returned for the same type. An empty name defaults to the type.
func (r Registry) New(ctx context.Context, typ, name string, cfg Config, deps Deps) (Sink, error) {
	if name == "" {
		name = typ
	}
	t, ok := r[typ]
	if !ok {
		return nil, fmt.Errorf("sink %s: unknown type %q (known: %s)", name, typ, strings.Join(r.Types(), ", "))
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = t.NewConfig()
	}
	deps.Name = name
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	deps.Log = deps.Log.With(zap.String("sink", name))
	if deps.Getenv == nil {
		deps.Getenv = func(string) string { return "" }
	}
	if err := ValidSpecVersion(deps.SpecVersion); err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	deps.SpecVersion = cmp.Or(deps.SpecVersion, Spec16)
	s, err := t.New(ctx, cfg, deps)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	return WithSpecVersion(s, deps.SpecVersion), nil
}

// DecodeConfig decodes raw into the struct pointed to by into, using its
// yaml tags, with config.DecodeValue. It is strict: a key that names no
// field is an error naming the key and the known ones, and a value of the
// wrong type one naming its path. A nil raw leaves into untouched.
func DecodeConfig(raw map[string]any, into any) error {
	if raw == nil {
		return nil
	}
	return config.DecodeValue(raw, into)
}
