package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Object is one Kubernetes object read from a manifest file.
type Object struct {
	// File is the path the object was read from, as given to Parse or found
	// by ReadPath.
	File string
	// Line is the 1-based line where the object starts: the first line of its
	// YAML document, or, for an item of a `kind: List`, the item's line.
	Line int
	// Index is the 0-based position of the object's document among the
	// non-empty documents of the file; the items of a List share its index.
	Index int
	// Obj is the object as plain data: map[string]any, []any, string, int64,
	// float64, bool and nil only.
	Obj map[string]any
}

// Parse reads every object of a multi-document YAML (or JSON) file. file is
// used in Object.File and in error messages only.
//
// Documents that cannot be read (malformed YAML, a document that is not a
// mapping, a List item that is not a mapping) do not stop the others: Parse
// returns the objects of the good documents together with an error joining
// one "file:line: reason" per bad document.
func Parse(file string, data []byte) ([]Object, error) {
	objs, _, err := parse(file, data, 0)
	return objs, err
}

// parse is Parse reading at most maxDocs documents (0: all of them); stop is
// the line of the first document left unread, 0 when none was.
func parse(file string, data []byte, maxDocs int) (objs []Object, stop int, err error) {
	var errs []error
	index := 0
	for i, c := range splitDocuments(data) {
		if maxDocs > 0 && i >= maxDocs {
			stop = c.line
			break
		}
		got, err := parseChunk(file, c, &index)
		objs = append(objs, got...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return objs, stop, errors.Join(errs...)
}

// ReadPath reads path as Read does, with the default Limits, for callers
// that want all or nothing: what Read skips is an error here.
func ReadPath(path string) ([]Object, error) {
	objs, skips, err := Read(path, Limits{})
	errs := []error{err}
	for _, s := range skips {
		errs = append(errs, errors.New(s.String()))
	}
	return objs, errors.Join(errs...)
}

// Read reads a manifest file, or every .yaml, .yml and .json file under a
// directory, recursively and in lexical order of their paths. Like Parse it
// returns the objects it could read together with the errors of the files
// and documents it could not; what it leaves out on purpose is in skips.
//
// Only regular files are read (a symlink is followed to one): a named pipe,
// a device, a socket or a directory named like a manifest is skipped without
// being opened for reading, so that nothing can block the walk or feed it
// without end. A file larger than lim.MaxFileBytes is skipped unread, and
// past lim.MaxDocuments documents the rest of a file is left unread.
func Read(path string, lim Limits) (objs []Object, skips []Skip, err error) {
	lim = lim.withDefaults()
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read manifests: %w", err)
	}
	if !info.IsDir() {
		return readFile(path, lim)
	}
	var files []string
	var errs []error
	walkErr := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, fmt.Errorf("read manifests %s: %w", p, err))
			if d != nil && d.IsDir() && p != path {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && isManifest(p) {
			files = append(files, p)
		}
		return nil
	})
	if walkErr != nil {
		errs = append(errs, fmt.Errorf("read manifests %s: %w", path, walkErr))
	}
	sort.Strings(files)
	for _, r := range readFiles(files, lim) {
		objs = append(objs, r.objs...)
		skips = append(skips, r.skips...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return objs, skips, errors.Join(errs...)
}

func isManifest(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readFile reads one file within lim: see Read.
func readFile(path string, lim Limits) ([]Object, []Skip, error) {
	data, skip, err := load(path, lim.MaxFileBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	if skip != nil {
		return nil, []Skip{*skip}, nil
	}
	objs, stop, err := parse(path, data, lim.MaxDocuments)
	if stop > 0 {
		return objs, []Skip{{File: path, Line: stop, Unread: true,
			Reason: fmt.Sprintf("more than %d documents; the rest of the file is not read", lim.MaxDocuments)}}, err
	}
	return objs, nil, err
}

// chunk is the text of one YAML document and the 1-based line it starts on.
type chunk struct {
	text []byte
	line int
}

// splitDocuments cuts data at document separators ("---" at the start of a
// line, and "..." end markers), so that each document is parsed on its own.
// A separator line stays with the document it opens (it may carry content,
// as in "--- {a: 1}"); a chunk holding only directives ("%YAML 1.2") is
// joined to the document that follows it.
func splitDocuments(data []byte) []chunk {
	var out []chunk
	start, startLine := 0, 1
	pendingStart, pendingLine := -1, 0
	emit := func(end, nextStart, nextLine int) {
		text := data[start:end]
		switch {
		case directivesOnly(text):
			if pendingStart < 0 {
				pendingStart, pendingLine = start, startLine
			}
		default:
			if pendingStart >= 0 {
				text = data[pendingStart:end]
				out = append(out, chunk{text: text, line: pendingLine})
				pendingStart = -1
			} else {
				out = append(out, chunk{text: text, line: startLine})
			}
		}
		start, startLine = nextStart, nextLine
	}
	line := 1
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			end += pos
			next = end + 1
		} else {
			end = len(data)
		}
		l := data[pos:end]
		switch {
		case pos > start && isMarker(l, "---"):
			emit(pos, pos, line)
		case isMarker(l, "..."):
			emit(pos, next, line+1)
		}
		pos = next
		line++
	}
	if start < len(data) || pendingStart >= 0 {
		emit(len(data), len(data), line)
	}
	if pendingStart >= 0 {
		out = append(out, chunk{text: data[pendingStart:], line: pendingLine})
	}
	return out
}

func isMarker(l []byte, m string) bool {
	if !bytes.HasPrefix(l, []byte(m)) {
		return false
	}
	rest := l[len(m):]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r'
}

// directivesOnly reports whether text has directive lines and nothing else
// but blank lines and comments.
func directivesOnly(text []byte) bool {
	seen := false
	for l := range bytes.SplitSeq(text, []byte("\n")) {
		l = bytes.TrimSpace(l)
		switch {
		case len(l) == 0 || l[0] == '#':
		case l[0] == '%':
			seen = true
		default:
			return false
		}
	}
	return seen
}

// parseChunk decodes the documents of one chunk (normally exactly one).
func parseChunk(file string, c chunk, index *int) (objs []Object, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s:%d: yaml parser failed: %v", file, c.line, r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(c.text))
	var errs []error
	for {
		var doc yaml.Node
		derr := dec.Decode(&doc)
		if errors.Is(derr, io.EOF) {
			break
		}
		if derr != nil {
			errs = append(errs, syntaxError(file, c, derr))
			break
		}
		root := &doc
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if isNull(root) {
			continue
		}
		cv := converter{file: file, offset: c.line - 1, budget: 64*len(c.text) + 4096, bytes: 16*len(c.text) + 1<<20}
		got, err := cv.objects(root, *index)
		*index++
		objs = append(objs, got...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return objs, errors.Join(errs...)
}

// yamlMessage is the text of a yaml error without its "yaml: line N:"
// prefix, and that N (0 when there is none).
func yamlMessage(err error) (string, int) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	rest, ok := strings.CutPrefix(msg, "line ")
	if !ok {
		return msg, 0
	}
	num, text, ok := strings.Cut(rest, ": ")
	n, convErr := strconv.Atoi(num)
	if !ok || convErr != nil {
		return msg, 0
	}
	return text, n
}

func syntaxError(file string, c chunk, err error) error {
	msg, _ := yamlMessage(err)
	return fmt.Errorf("%s:%d: %s", file, c.line-1+problemLine(c.text, err), msg)
}

// problemLine finds the 1-based line (within text) of a syntax error. The
// yaml library reports the line where the enclosing construct starts (for
// a bad indentation deep in a mapping, the mapping's first line), so this
// searches for the shortest prefix of text, in whole lines, that fails with
// the same message: the line that prefix ends on is where the problem is.
// A binary search keeps it to a few parses even for a huge document.
func problemLine(text []byte, err error) int {
	want, reported := yamlMessage(err)
	ends := lineEnds(text)
	fails := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(text[:ends[n-1]]))
		for {
			var doc yaml.Node
			e := dec.Decode(&doc)
			if e == nil {
				continue
			}
			got, _ := yamlMessage(e)
			return !errors.Is(e, io.EOF) && got == want
		}
	}
	lo, hi := 1, len(ends)
	if reported >= 1 && reported <= hi {
		lo = reported
	}
	if !fails(hi) {
		return lo
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// lineEnds returns the end offset (exclusive, including the newline) of
// each line of text.
func lineEnds(text []byte) []int {
	var ends []int
	for i, b := range text {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(text) == 0 || text[len(text)-1] != '\n' {
		ends = append(ends, len(text))
	}
	return ends
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// converter turns yaml nodes into plain values. budget bounds the number of
// values produced and bytes the length of their strings, so that aliases
// cannot expand a small file into an enormous (or endless) tree, nor one long
// string into gigabytes that every later stage would read.
type converter struct {
	file   string
	offset int
	budget int
	bytes  int
}

func (cv *converter) line(n *yaml.Node) int { return cv.offset + n.Line }

func (cv *converter) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", cv.file, cv.line(n), fmt.Sprintf(format, args...))
}

// objects converts a document root into objects, expanding Lists.
func (cv *converter) objects(root *yaml.Node, index int) ([]Object, error) {
	root = resolveAlias(root)
	if root.Kind != yaml.MappingNode {
		return nil, cv.errorf(root, "document is a %s, not a mapping", describe(root))
	}
	items := listItems(root)
	if items == nil {
		v, err := cv.value(root, 0)
		if err != nil {
			return nil, err
		}
		return []Object{{File: cv.file, Line: cv.line(root), Index: index, Obj: v.(map[string]any)}}, nil
	}
	var out []Object
	var errs []error
	for i, item := range items.Content {
		item = resolveAlias(item)
		switch {
		case isNull(item):
			continue
		case item.Kind != yaml.MappingNode:
			errs = append(errs, cv.errorf(item, "list item %d is a %s, not a mapping", i, describe(item)))
			continue
		}
		sub, err := cv.objects(item, index)
		out = append(out, sub...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// listItems returns the items of a List-kind mapping (kind "List" or any kind
// ending in "List" with an items sequence), or nil.
func listItems(root *yaml.Node) *yaml.Node {
	var kind string
	var items *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := resolveAlias(root.Content[i]), resolveAlias(root.Content[i+1])
		switch k.Value {
		case "kind":
			if v.Kind == yaml.ScalarNode {
				kind = v.Value
			}
		case "items":
			if v.Kind == yaml.SequenceNode {
				items = v
			}
		}
	}
	if !strings.HasSuffix(kind, "List") {
		return nil
	}
	return items
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 64; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.ScalarNode:
		return "scalar " + n.ShortTag()
	case yaml.AliasNode:
		return "alias"
	case yaml.MappingNode:
		return "mapping"
	}
	return "node"
}

// maxDepth bounds nesting; no Kubernetes object comes near it.
const maxDepth = 10000

func (cv *converter) value(n *yaml.Node, depth int) (any, error) {
	cv.budget--
	if cv.budget < 0 {
		return nil, cv.errorf(n, "document expands to too many values (alias expansion)")
	}
	if cv.bytes -= len(n.Value); cv.bytes < 0 {
		return nil, cv.errorf(n, "document expands to too many bytes (alias expansion)")
	}
	if depth > maxDepth {
		return nil, cv.errorf(n, "document nested deeper than %d levels", maxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, cv.errorf(n, "unknown alias %q", n.Value)
		}
		return cv.value(n.Alias, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return cv.value(n.Content[0], depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := cv.value(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		if err := cv.mapping(n, out, depth); err != nil {
			return nil, err
		}
		return out, nil
	case yaml.ScalarNode:
		return cv.scalar(n)
	}
	return nil, cv.errorf(n, "unexpected yaml node")
}

// mapping fills out with the pairs of n, applying merge keys ("<<") after the
// explicit keys so that explicit keys win.
func (cv *converter) mapping(n *yaml.Node, out map[string]any, depth int) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return cv.errorf(k, "mapping key is a %s, not a string", describe(k))
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if _, dup := out[k.Value]; dup {
			return cv.errorf(k, "mapping key %q already defined", k.Value)
		}
		if cv.bytes -= len(k.Value); cv.bytes < 0 {
			return cv.errorf(k, "document expands to too many bytes (alias expansion)")
		}
		val, err := cv.value(v, depth+1)
		if err != nil {
			return err
		}
		out[k.Value] = val
	}
	for _, m := range merges {
		m = resolveAlias(m)
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, s := range sources {
			s = resolveAlias(s)
			if s.Kind != yaml.MappingNode {
				return cv.errorf(s, "merge value is a %s, not a mapping", describe(s))
			}
			extra := map[string]any{}
			if err := cv.mapping(s, extra, depth+1); err != nil {
				return err
			}
			for k, v := range extra {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
		}
	}
	return nil
}

func (cv *converter) scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!str", "!!binary", "!!timestamp":
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value, nil
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		return x, nil
	case time.Time:
		return n.Value, nil
	}
	return n.Value, nil
}
