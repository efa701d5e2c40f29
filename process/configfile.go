package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadConfigFile merges a YAML file over c. Every key is checked against
// the configuration's fields first, so that an unknown key is reported with
// its path and line and the keys that would be known there
// (`line 3: stream.dataDri: unknown key (known: dataDir, listen, ...)`),
// and a value of the wrong type with its path, instead of Go's type names.
func loadConfigFile(c *Config, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(root.Content) == 0 {
		return nil // an empty file
	}
	paths := map[int]string{}
	var errs []error
	checkKeys(root.Content[0], reflect.TypeOf(*c), "", paths, &errs)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(len(errs) == 0) // unknown keys are reported above, with their path
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		errs = append(errs, namedTypeErrors(err, paths))
	}
	if len(errs) > 0 {
		return fmt.Errorf("config %s:\n%w", path, errors.Join(errs...))
	}
	return nil
}

// checkKeys walks node against the struct type t, reporting unknown keys
// with their path, and records the path of every value's line in paths.
func checkKeys(node *yaml.Node, t reflect.Type, path string, paths map[int]string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	paths[node.Line] = path
	switch {
	case node.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		structFields(t, fields)
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			p := join(path, k.Value)
			paths[k.Line] = p
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, fmt.Errorf("line %d: %s: unknown key (known here: %s)", k.Line, p, strings.Join(sortedNames(fields), ", ")))
				continue
			}
			checkKeys(v, ft, p, paths, errs)
		}
	case node.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, item := range node.Content {
			checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), paths, errs)
		}
	}
	// Maps (a sink's config block) are checked by their owner.
}

// structFields maps the YAML keys of struct type t to their types,
// following inline fields.
func structFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		parts := strings.Split(f.Tag.Get("yaml"), ",")
		inline := false
		for _, o := range parts[1:] {
			inline = inline || o == "inline"
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			structFields(ft, out)
			continue
		}
		if parts[0] == "-" || !f.IsExported() {
			continue
		}
		name := parts[0]
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
}

func sortedNames(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// namedTypeErrors rewrites yaml.v3's "line N: cannot unmarshal ..." lines
// with the path of the value at that line.
func namedTypeErrors(err error, paths map[int]string) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var errs []error
	for _, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			errs = append(errs, errors.New(e))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		msg := strings.NewReplacer("!!str", "the text", "!!int", "the number", "!!bool", "the boolean", "!!map", "a mapping", "!!seq", "a list").Replace(m[2])
		msg = regexp.MustCompile(`into [A-Za-z0-9_.\[\]*]+\.([A-Za-z0-9_]+)`).ReplaceAllString(msg, "into a $1")
		if p := paths[line]; p != "" {
			errs = append(errs, fmt.Errorf("line %d: %s: %s", line, p, msg))
		} else {
			errs = append(errs, fmt.Errorf("line %d: %s", line, msg))
		}
	}
	return errors.Join(errs...)
}
