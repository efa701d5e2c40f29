package collector

import (
	"fmt"
	pathpkg "path"
	"regexp"
	"slices"
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
	images, commands    []*regexp.Regexp
	words, envs, accels []*regexp.Regexp
	flags, env          map[string]bool
}

// newServingSignature compiles the built-in signature (builtin, of
// schemas.DeclaredArguments) and more.
func newServingSignature(builtin, more schemas.ServingSignature) (*servingSignature, error) {
	s := &servingSignature{flags: map[string]bool{}, env: map[string]bool{}}
	var err error
	if s.images, err = compilePatterns("image", builtin.Images, more.Images); err != nil {
		return nil, err
	}
	if s.commands, err = compilePatterns("command", builtin.Commands, more.Commands); err != nil {
		return nil, err
	}
	var words []string
	for _, w := range slices.Concat(builtin.Words, more.Words) {
		words = append(words, `(?:^|[^a-z])(?:`+w+`)`)
	}
	if s.words, err = compilePatterns("word", words, nil); err != nil {
		return nil, err
	}
	if s.envs, err = compilePatterns("env", builtin.EnvPatterns, more.EnvPatterns); err != nil {
		return nil, err
	}
	if s.accels, err = compilePatterns("accelerator", builtin.Accelerators, more.Accelerators); err != nil {
		return nil, err
	}
	for _, f := range slices.Concat(builtin.Flags, more.Flags) {
		s.flags[f] = true
	}
	for _, e := range slices.Concat(builtin.Env, more.Env) {
		s.env[e] = true
	}
	return s, nil
}

// compilePatterns compiles the patterns of both lists, in order; what
// names them in an error.
func compilePatterns(what string, builtin, more []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range slices.Concat(builtin, more) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("serving %s pattern %q: %w", what, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// MayServe reports whether some container of in may serve a model: its
// image is an engine's, its command line (or a start script a ConfigMap
// holds) runs one, it passes a model or engine flag, or it sets a model
// env var (or a ConfigMap it takes with envFrom does). The transformer decides what it
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
		last := strings.ToLower(pathpkg.Base(reference.Path(named)))
		for _, re := range s.words {
			if re.MatchString(last) {
				return true
			}
		}
	}
	for _, a := range ct.Accelerators {
		for _, re := range s.accels {
			if re.MatchString(strings.ToLower(a)) {
				return true
			}
		}
	}
	line := strings.Join(slices.Concat(ct.Command, ct.Args), " ")
	for _, re := range s.commands {
		if re.MatchString(line) {
			return true
		}
	}
	for w := range strings.FieldsSeq(line) {
		if name, _, _ := strings.Cut(w, "="); s.flags[name] {
			return true
		}
	}
	for _, e := range ct.Env {
		if s.env[e.Name] && (e.Value != "" || e.From != nil) {
			return true
		}
		for _, re := range s.envs {
			if re.MatchString(e.Name) {
				return true
			}
		}
	}
	for _, src := range ct.EnvFrom {
		for _, e := range src.Env {
			if s.env[e.Name] && e.Value != "" {
				return true
			}
		}
	}
	// A start script a ConfigMap holds runs what it runs.
	for _, f := range ct.Files {
		if f.Kind != schemas.FileScript {
			continue
		}
		for _, re := range s.commands {
			if re.MatchString(f.Text) {
				return true
			}
		}
	}
	return false
}
