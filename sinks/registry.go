package sinks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"
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
// yaml tags. It is strict: a key that names no field is an error naming the
// key and the known ones. A nil raw leaves into untouched.
func DecodeConfig(raw map[string]any, into any) error {
	if raw == nil {
		return nil
	}
	if err := knownKeys(raw, into); err != nil {
		return err
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("config: %s", yamlMessage(err))
	}
	return nil
}

// knownKeys reports the first-level keys of raw that name no field of the
// struct into points to, with the keys it knows, in words a user reads.
func knownKeys(raw map[string]any, into any) error {
	t := reflect.TypeOf(into)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	known := map[string]bool{}
	fieldNames(t, known)
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			errs = append(errs, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(names, ", ")))
		}
	}
	return errors.Join(errs...)
}

// fieldNames adds the YAML keys of struct type t to known, following
// `yaml:",inline"` fields.
func fieldNames(t reflect.Type, known map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		parts := strings.Split(f.Tag.Get("yaml"), ",")
		if slices.Contains(parts[1:], "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fieldNames(ft, known)
			}
			continue
		}
		if parts[0] == "-" || !f.IsExported() {
			continue
		}
		name := parts[0]
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		known[name] = true
	}
}

// yamlMessage turns a yaml.v3 type error into the lines it lists, without
// Go type names' package paths.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return err.Error()
}
