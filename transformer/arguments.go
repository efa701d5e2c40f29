package transformer

import (
	"sort"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// Arguments declares what the rules read of a command line: every flag whose
// value some rule reads, the flags that never take a value, and the env vars
// read as arguments. The collector keeps only these values (schemas/arguments.json
// is this declaration for the built-in rules).
func (rs RuleSet) Arguments() schemas.Arguments {
	calls, keywords := rs.pythonCalls()
	return schemas.Arguments{
		Serving:        rs.servingSignature(),
		ValueFlags:     sortedKeys(rs.valueFlags()),
		BooleanFlags:   sortedKeys(set(rs.BooleanFlags)),
		ArgsEnv:        sortedKeys(set(rs.ArgsEnv)),
		Env:            sortedKeys(rs.readEnv()),
		EnvPatterns:    sortedKeys(set(rs.Models.EnvPatterns)),
		PythonCalls:    sortedKeys(calls),
		PythonKeywords: sortedKeys(keywords),
	}
}

// valueFlags are the flags whose values some rule reads.
func (rs RuleSet) valueFlags() map[string]bool {
	values := map[string]bool{}
	add := func(fs []string) {
		for _, f := range fs {
			values[f] = true
		}
	}
	for _, s := range rs.Settings {
		add(s.Flags)
	}
	m := rs.Models
	add(m.Flags)
	add(m.HFFlags)
	add(m.RevisionFlags)
	for _, rt := range rs.Runtimes {
		add(rt.ModelFlags)
		if rt.BackendFlag != nil {
			add(rt.BackendFlag.Flags)
		}
	}
	for _, ro := range rs.Roles {
		if ro.Flag != "" && ro.Value != "" {
			values[ro.Flag] = true
		}
	}
	add(m.ListFlags)
	for _, jf := range m.JSONFlags {
		add(jf.Flags)
	}
	for _, d := range rs.Downloads {
		add(d.DestFlags)
		add(d.RevisionFlags)
	}
	add(rs.KeepValues)
	return values
}

// readEnv are the env vars whose values some rule reads.
func (rs RuleSet) readEnv() map[string]bool {
	env := map[string]bool{}
	m := rs.Models
	for _, l := range [][]string{m.Env, m.HFEnv, m.RevisionEnv, m.ListEnv} {
		for _, e := range l {
			env[e] = true
		}
	}
	for _, s := range rs.Settings {
		for _, e := range s.Env {
			env[e] = true
		}
	}
	for _, rt := range rs.Runtimes {
		for _, e := range rt.Env {
			env[e.Name] = true
		}
	}
	return env
}

// pythonCalls are the Python calls the download rules read, and the
// keyword arguments of them they read.
func (rs RuleSet) pythonCalls() (calls, keywords map[string]bool) {
	calls, keywords = map[string]bool{}, map[string]bool{}
	for _, d := range rs.Downloads {
		c := d.Code
		if c == nil {
			continue
		}
		for _, n := range c.Calls {
			calls[n] = true
		}
		keywords[c.Source] = true
		if c.Revision != "" {
			keywords[c.Revision] = true
		}
		for _, k := range c.Dest {
			keywords[k] = true
		}
	}
	return calls, keywords
}

// servingSignature is what marks a container as serving: the runtimes'
// image patterns, their launch commands and hints, their flags and the
// model flags and env.
func (rs RuleSet) servingSignature() schemas.ServingSignature {
	images, commands, flags := map[string]bool{}, map[string]bool{}, map[string]bool{}
	words, envPatterns := map[string]bool{}, set(rs.Models.EnvPatterns)
	for _, rt := range rs.Runtimes {
		for _, w := range rt.Words {
			words[w] = true
		}
		for _, f := range rt.EnvFamilies {
			envPatterns[f] = true
		}
		for _, p := range rt.Images {
			images[p.Pattern] = true
		}
		for _, ps := range [][]PatternRule{rt.Commands, rt.Hints} {
			for _, p := range ps {
				commands[strings.TrimPrefix(p.Pattern, "^")] = true
			}
		}
		for _, f := range append(append([]string(nil), rt.EngineFlags...), rt.ModelFlags...) {
			flags[f] = true
		}
	}
	m := rs.Models
	for _, f := range append(append([]string(nil), m.Flags...), m.HFFlags...) {
		flags[f] = true
	}
	return schemas.ServingSignature{
		Images:       sortedKeys(images),
		Commands:     sortedKeys(commands),
		Flags:        sortedKeys(flags),
		Env:          sortedKeys(set(append(append(append([]string(nil), m.Env...), m.HFEnv...), m.ListEnv...))),
		Words:        sortedKeys(words),
		EnvPatterns:  sortedKeys(envPatterns),
		Accelerators: rs.Serving.Accelerators,
	}
}

// sortedKeys is the keys of m, sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
