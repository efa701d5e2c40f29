package sinks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"go.uber.org/zap"
)

// Factory builds the sink called name from its raw configuration block (a
// YAML or JSON object decoded into a map). It decodes raw strictly with
// DecodeConfig, validates, and constructs; it starts no I/O.
type Factory func(name string, raw map[string]any, log *zap.Logger) (Sink, error)

// Registry maps a sink type ("file", "stdout") to its Factory. Build one
// explicitly (see sinks/registry.Builtin) and pass it where sinks are made.
type Registry map[string]Factory

// New builds a sink of type typ. An empty name defaults to the type.
func (r Registry) New(typ, name string, raw map[string]any, log *zap.Logger) (Sink, error) {
	if name == "" {
		name = typ
	}
	f, ok := r[typ]
	if !ok {
		return nil, fmt.Errorf("sink %s: unknown type %q (known: %v)", name, typ, r.Types())
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s, err := f(name, raw, log)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	return s, nil
}

// Types lists the registered sink types, sorted.
func (r Registry) Types() []string {
	out := make([]string, 0, len(r))
	for k := range r {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DecodeConfig decodes raw into the config struct pointed to by into, using
// the struct's json tags. It is strict: a key that names no field is an error
// naming that key. A nil raw leaves into untouched.
func DecodeConfig(raw map[string]any, into any) error {
	if raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
