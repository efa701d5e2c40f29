package collector

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"

	"github.com/bomstream/bomstream/schemas"
)

// servingSignature is schemas.ServingSignature compiled: whether a
// container may serve a model, by its image, its command line, the flags
// it passes or the env it sets. It decides nothing the transformer does;
// it only keeps the pods of unknown owners that serve nothing (the pods of
// a workflow engine, a CI system) out of the event log.
type servingSignature struct {
	images, commands []*regexp.Regexp
	flags, env       map[string]bool
}

// newServingSignature compiles the built-in signature and more.
func newServingSignature(more schemas.ServingSignature) (*servingSignature, error) {
	decl, err := schemas.DeclaredArguments()
	if err != nil {
		return nil, err
	}
	sig := decl.Serving
	sig.Images = append(append([]string(nil), sig.Images...), more.Images...)
	sig.Commands = append(append([]string(nil), sig.Commands...), more.Commands...)
	sig.Flags = append(append([]string(nil), sig.Flags...), more.Flags...)
	sig.Env = append(append([]string(nil), sig.Env...), more.Env...)
	s := &servingSignature{flags: map[string]bool{}, env: map[string]bool{}}
	for _, p := range sig.Images {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("serving image pattern %q: %w", p, err)
		}
		s.images = append(s.images, re)
	}
	for _, p := range sig.Commands {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("serving command pattern %q: %w", p, err)
		}
		s.commands = append(s.commands, re)
	}
	for _, f := range sig.Flags {
		s.flags[f] = true
	}
	for _, e := range sig.Env {
		s.env[e] = true
	}
	return s, nil
}

// MayServe reports whether some container of in may serve a model: its
// image is an engine's, its command line runs one, it passes a model or
// engine flag, or it sets a model env var. The transformer decides what it
// serves; this only keeps what surely serves nothing out.
func (n *Normalizer) MayServe(in *schemas.Inputs) bool {
	for ci := range in.Components {
		for k := range in.Components[ci].Containers {
			if n.serving.container(&in.Components[ci].Containers[k]) {
				return true
			}
		}
	}
	return false
}

func (s *servingSignature) container(ct *schemas.Container) bool {
	if named, err := reference.ParseNormalizedNamed(strings.TrimSpace(ct.Image)); err == nil {
		name := reference.Domain(named) + "/" + reference.Path(named)
		for _, re := range s.images {
			if re.MatchString(name) {
				return true
			}
		}
	}
	line := strings.Join(append(append([]string(nil), ct.Command...), ct.Args...), " ")
	for _, re := range s.commands {
		if re.MatchString(line) {
			return true
		}
	}
	for _, w := range strings.Fields(line) {
		if name, _, _ := strings.Cut(w, "="); s.flags[name] {
			return true
		}
	}
	for _, e := range ct.Env {
		if s.env[e.Name] && (e.Value != "" || e.From != nil) {
			return true
		}
	}
	return false
}
