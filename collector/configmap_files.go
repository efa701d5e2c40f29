package collector

import (
	pathpkg "path"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

// The files a ConfigMap puts in a container are kept when they are a
// start script or a configuration file, and scrubbed like any input:
//
//   - a script (a .sh or .bash file, a file whose first line is #!, or a
//     path the container's command or args run) is redacted word by word
//     like a command line (argRedactor.script): quoting cannot hide a
//     value, comments and here-documents are dropped;
//   - a configuration file (a YAML or JSON mapping, or key=value lines)
//     keeps only the keys a rule reads: a key whose name, with dashes and
//     underscores equal, is a flag whose value a rule reads
//     (schemas.DeclaredArguments, Config.ArgAllow: "--max-model-len" for
//     max_model_len) or an allow-listed env name, and whose value passes
//     schemas.RedactText and the credential check. Its text is then
//     "dotted.key.path=value" lines in document order.
//
// Any other file (a chat template, a Python module, a JSON list) is left
// out.

// file is the File the text of a ConfigMap key makes at path at in ct;
// false when it is neither a script nor a configuration file.
func (n *Normalizer) file(at, loc, text string, ct *schemas.Container) (schemas.File, bool) {
	f := schemas.File{Path: at, Locator: loc}
	if isScript(at, text, ct) {
		f.Kind, f.Text = schemas.FileScript, n.args.script(text, true, 0)
		return f, true
	}
	cfg, ok := n.configText(text)
	if !ok {
		return f, false
	}
	f.Kind, f.Text = schemas.FileConfig, cfg
	return f, true
}

// isScript reports a shell script: by its name, its #! line, or because
// the container's command or args run it: as the program, or given to a
// shell (sh FILE, bash -e FILE, source FILE). A file a program is given
// as a flag's value (vllm serve --config FILE) is no script, nor is one
// named as configuration (.yaml, .json, ...).
func isScript(at, text string, ct *schemas.Container) bool {
	switch pathpkg.Ext(at) {
	case ".sh", ".bash":
		return true
	case ".yaml", ".yml", ".json", ".conf", ".cfg", ".toml", ".ini", ".properties", ".env", ".txt":
		return strings.HasPrefix(text, "#!")
	}
	if strings.HasPrefix(text, "#!") {
		return true
	}
	toks, starts := commandWords(ct)
	for i, tok := range toks {
		if tok != at {
			continue
		}
		if starts[i] {
			return true
		}
		// The nearest word before it that is no option runs it.
		for j := i - 1; j >= 0; j-- {
			if p := toks[j]; !strings.HasPrefix(p, "-") {
				switch pathpkg.Base(p) {
				case "source", ".", "exec":
					return true
				}
				if cmdline.IsShell(p) {
					return true
				}
				break
			}
		}
	}
	return false
}

// commandWords splits a container's command and args into words, and
// says of each whether it starts a command: the first word of all, the
// first of a script (an element with spaces), the first after ;, &, |,
// a newline or a parenthesis.
func commandWords(ct *schemas.Container) (toks []string, starts []bool) {
	for _, list := range [][]string{ct.Command, ct.Args} {
		for _, w := range list {
			start := len(toks) == 0 || strings.ContainsAny(w, " \t\n")
			tok := strings.Builder{}
			flush := func() {
				if tok.Len() > 0 {
					toks, starts = append(toks, tok.String()), append(starts, start)
					tok.Reset()
					start = false
				}
			}
			for _, r := range w {
				switch {
				case strings.ContainsRune(";&|\n()`", r):
					flush()
					start = true
				case shellSeparator(r):
					flush()
				default:
					tok.WriteRune(r)
				}
			}
			flush()
		}
	}
	return toks, starts
}

// shellSeparator: what separates the words of a command line.
func shellSeparator(r rune) bool {
	switch r {
	case ' ', '\t', '\n', ';', '&', '|', '(', ')', '\'', '"', '`':
		return true
	}
	return false
}

// configText is what a configuration file keeps: its allow-listed keys as
// "dotted.key.path=value" lines; false when text is not a YAML or JSON
// mapping nor key=value lines.
func (n *Normalizer) configText(text string) (string, bool) {
	var kept []string
	add := func(loc, key, value string) {
		if v, ok := n.configValue(key, value); ok {
			kept = append(kept, loc+"="+v)
		}
	}
	if m := yamlMapping(text); m != nil {
		configNode(m, "", "", add)
		return strings.Join(kept, "\n"), true
	}
	if !keyValueLines(text, add) {
		return "", false
	}
	return strings.Join(kept, "\n"), true
}

// yamlMapping is the mapping a YAML (or JSON) text holds, whose keys are
// plain scalars; nil when it holds anything else (a list, a scalar, a
// template that reads as a mapping of mappings).
func yamlMapping(text string) *yaml.Node {
	var doc yaml.Node
	if len(text) > 1<<20 || yaml.Unmarshal([]byte(text), &doc) != nil ||
		doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil
		}
	}
	return m
}

// configNode hands add every scalar under nd with its locator and the key
// nearest above it, in document order. Aliases are not followed.
func configNode(nd *yaml.Node, loc, key string, add func(loc, key, value string)) {
	switch nd.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(nd.Content); i += 2 {
			k := nd.Content[i].Value
			configNode(nd.Content[i+1], joinKey(loc, k), k, add)
		}
	case yaml.SequenceNode:
		for i, item := range nd.Content {
			configNode(item, joinIndex(loc, i), key, add)
		}
	case yaml.ScalarNode:
		if key != "" && nd.Tag != "!!null" {
			add(loc, key, nd.Value)
		}
	}
}

// keyValueLines hands add every KEY=value line of text (an env file, a
// .properties or .ini file: blank lines, # and ; comments, [section]
// headers and "export " allowed), the value unquoted; false when a line
// is none of those, or none is a KEY=value line.
func keyValueLines(text string, add func(loc, key, value string)) bool {
	section, found := "", false
	type line struct{ loc, key, value string }
	var lines []line
	for raw := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(raw)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
			continue
		case len(t) > 2 && t[0] == '[' && t[len(t)-1] == ']':
			section = strings.TrimSpace(t[1 : len(t)-1])
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		k, v, ok := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if !ok || !configKey(k) {
			return false
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		found = true
		lines = append(lines, line{joinKey(section, k), k, v})
	}
	if !found {
		return false
	}
	for _, l := range lines {
		add(l.loc, l.key, l.value)
	}
	return true
}

// configKey: a key of a key=value line (letters, digits, _ - .).
func configKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// configValue is the value kept for key in a configuration file: only for
// an allow-listed key, an argsEnv one redacted as arguments, and only
// when it is one line that RedactText leaves alone and that does not
// look like a credential.
func (n *Normalizer) configValue(key, value string) (string, bool) {
	norm := configKeyName(key)
	if value == "" || !n.configAllow[norm] || strings.ContainsAny(value, "\n\r") {
		return "", false
	}
	if n.args.argsEnv[key] {
		return n.args.script(value, false, 0), true
	}
	if looksLikeCredential(value) {
		return "", false
	}
	return value, true
}

// configKeyName is a key with dashes and underscores made equal.
func configKeyName(k string) string { return strings.ReplaceAll(k, "_", "-") }

// configAllowList is the set configValue keeps: the flags whose values are
// kept, without their dashes, and the allow-listed env names, each through
// configKeyName.
func configAllowList(args *argRedactor, env map[string]bool) map[string]bool {
	out := map[string]bool{}
	for f := range args.values {
		if k := strings.TrimLeft(f, "-"); k != "" {
			out[configKeyName(k)] = true
		}
	}
	for e := range env {
		out[configKeyName(e)] = true
	}
	for e := range args.argsEnv {
		out[configKeyName(e)] = true
	}
	return out
}
