package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Lines maps the path of every key in a document ("stream.replicas",
// "sinks[0].config", "rules[1].deny[0]") to the line it is on. A list item
// has the line its value starts on. [Decode] returns it so that a check
// made after decoding can name the line of the value at fault.
type Lines map[string]int

// Decode reads the YAML document data into the value into points to,
// strictly: a key that names no field is an error, and so is a value of the
// wrong type. Each problem is one line, "line N: path: what is wrong"
// (`line 3: stream.replicas: cannot unmarshal the text ` + "`three`" + ` into int`),
// and all of them are reported at once, joined. The caller names the file.
//
// Keys are the yaml tags of into's struct fields; inline fields are
// followed, and an inline map takes any other key. A value of type
// [yaml.Node] or of a type with its own UnmarshalYAML, and the values of a
// map[string]any, are left to their owner. An empty document leaves into
// untouched.
func Decode(data []byte, into any) (Lines, error) {
	return decode(data, into, true)
}

// DecodeValue decodes raw, a value as YAML decodes into an any (maps, lists,
// strings, numbers, booleans), into the value into points to, as strictly
// as [Decode]. raw has no lines: problems name the path alone, and an
// unknown key is quoted (`unknown key "bukcet" (known: bucket, prefix)`).
// A nil raw leaves into untouched.
func DecodeValue(raw, into any) error {
	if raw == nil {
		return nil
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return fmt.Errorf("encode the values: %w", err)
	}
	_, err = decode(b, into, false)
	return err
}

// decode is Decode; withLines says whether the lines of data are the
// user's (a file) or made up (DecodeValue's), and so worth naming.
func decode(data []byte, into any, withLines bool) (Lines, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return Lines{}, nil // an empty document
	}
	w := walker{withLines: withLines, lines: Lines{}, paths: map[int]string{}, values: map[int][]value{}}
	w.walk(root.Content[0], reflect.TypeOf(into), "")
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(len(w.errs) == 0) // unknown keys are reported above, with their path
	if err := dec.Decode(into); err != nil && !errors.Is(err, io.EOF) {
		w.errs = append(w.errs, w.typeErrors(err)...)
	}
	return w.lines, errors.Join(w.errs...)
}

// walker checks the keys of a document against a Go type. It is the one
// place where unknown keys become errors.
type walker struct {
	withLines bool
	lines     Lines
	paths     map[int]string // the path of the last key on a line, for type errors
	values    map[int][]value
	errs      []error
}

// value is a value node and its path: type errors name only a line, and a
// line may hold several values ({replicas: x, interval: y}).
type value struct {
	path string
	node *yaml.Node
}

var (
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// walk checks node against type t at path, recording lines on the way.
func (w *walker) walk(node *yaml.Node, t reflect.Type, path string) {
	if node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	if path != "" {
		w.values[node.Line] = append(w.values[node.Line], value{path, node})
	}
	if t == nil || t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
	}
	w.paths[node.Line] = path
	switch {
	case node.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		w.walkStruct(node, t, path)
	case node.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			p := join(path, k.Value)
			w.key(p, k.Line)
			w.walk(v, t.Elem(), p)
		}
	case node.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, item := range node.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			w.key(p, item.Line)
			w.walk(item, t.Elem(), p)
		}
	}
}

// walkStruct checks the keys of a mapping against the fields of struct t.
func (w *walker) walkStruct(node *yaml.Node, t reflect.Type, path string) {
	fields, open := structFields(t)
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		p := join(path, k.Value)
		w.key(p, k.Line)
		ft, ok := fields[k.Value]
		switch {
		case ok:
			w.walk(v, ft, p)
		case !open:
			w.unknown(path, k, fields)
		}
	}
}

// key records the line of the key at path.
func (w *walker) key(path string, line int) {
	if _, seen := w.lines[path]; !seen {
		w.lines[path] = line
	}
	w.paths[line] = path
}

// unknown reports key k, in the mapping at path, that names no field.
func (w *walker) unknown(path string, k *yaml.Node, fields map[string]reflect.Type) {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	known := strings.Join(names, ", ")
	switch {
	case w.withLines:
		w.errs = append(w.errs, fmt.Errorf("line %d: %s: unknown key (known here: %s)", k.Line, join(path, k.Value), known))
	case path == "":
		w.errs = append(w.errs, fmt.Errorf("unknown key %q (known: %s)", k.Value, known))
	default:
		w.errs = append(w.errs, fmt.Errorf("%s: unknown key %q (known: %s)", path, k.Value, known))
	}
}

// structFields maps the YAML keys of struct type t to their types,
// following inline fields; open says an inline map takes any other key.
func structFields(t reflect.Type) (fields map[string]reflect.Type, open bool) {
	fields = map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for f := range t.Fields() {
			parts := strings.Split(f.Tag.Get("yaml"), ",")
			if slices.Contains(parts[1:], "inline") {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Map {
					open = true
				} else if ft.Kind() == reflect.Struct {
					add(ft)
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
			fields[name] = f.Type
		}
	}
	add(t)
	return fields, open
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	yamlLine  = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlValue = regexp.MustCompile("^cannot unmarshal (!![a-z]+)(?: `([^`]*)`)? into ")
	goList    = regexp.MustCompile(`into \[\][^ ]+`)
	goMap     = regexp.MustCompile(`into map\[[^ ]+`)
	goType    = regexp.MustCompile(`into [A-Za-z0-9_.*]+\.([A-Za-z0-9_]+)`)
	tagWords  = strings.NewReplacer("!!str", "the text", "!!int", "the number", "!!float", "the number",
		"!!bool", "the boolean", "!!map", "a mapping", "!!seq", "a list", "!!null", "nothing")
)

// typeErrors rewrites yaml's "line N: cannot unmarshal !!str `x` into
// pkg.T" lines in a user's words, each with the path of the value at that
// line, and the line when it is the user's.
func (w *walker) typeErrors(err error) []error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []error{err}
	}
	var errs []error
	for _, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			errs = append(errs, errors.New(e))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		p := w.pathOf(line, m[2])
		msg := goList.ReplaceAllString(m[2], "into a list")
		msg = goMap.ReplaceAllString(msg, "into a mapping")
		msg = goType.ReplaceAllString(tagWords.Replace(msg), "into a $1")
		switch {
		case w.withLines && p != "":
			errs = append(errs, fmt.Errorf("line %d: %s: %s", line, p, msg))
		case w.withLines:
			errs = append(errs, fmt.Errorf("line %d: %s", line, msg))
		case p != "":
			errs = append(errs, fmt.Errorf("%s: %s", p, msg))
		default:
			errs = append(errs, errors.New(msg))
		}
	}
	return errs
}

// pathOf is the path of the value a type error's message (msg, "cannot
// unmarshal !!str `x` into int") is about, among the values on its line.
func (w *walker) pathOf(line int, msg string) string {
	m := yamlValue.FindStringSubmatch(msg)
	if m == nil {
		return w.paths[line]
	}
	for _, v := range w.values[line] {
		switch m[1] {
		case "!!seq":
			if v.node.Kind == yaml.SequenceNode {
				return v.path
			}
		case "!!map":
			if v.node.Kind == yaml.MappingNode {
				return v.path
			}
		default:
			text, cut := strings.CutSuffix(m[2], "...")
			if v.node.Kind == yaml.ScalarNode && (v.node.Value == text || cut && strings.HasPrefix(v.node.Value, text)) {
				return v.path
			}
		}
	}
	return w.paths[line]
}
