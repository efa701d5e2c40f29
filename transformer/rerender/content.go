package rerender

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// content is a BOM without what only names bomstream's own build: the
// serial number (it hashes the tool's version), the document version,
// metadata.tools and metadata.timestamp.
func content(bom []byte) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(bom, &doc); err != nil {
		return nil, fmt.Errorf("read bom: %w", err)
	}
	delete(doc, "serialNumber")
	delete(doc, "version")
	if md, ok := doc["metadata"].(map[string]any); ok {
		delete(md, "tools")
		delete(md, "timestamp")
	}
	return doc, nil
}

// difference says how the BOM next differs from old in content, "" when
// it does not; nil is no BOM. The words name the components that came or
// went ("+runtime vllm 0.6.3, -model x"), else "content".
func difference(old, next []byte) (string, error) {
	switch {
	case old == nil && next == nil:
		return "", nil
	case old == nil:
		return "newly serving", nil
	case next == nil:
		return "no longer serving", nil
	}
	a, err := content(old)
	if err != nil {
		return "", fmt.Errorf("stored bom: %w", err)
	}
	b, err := content(next)
	if err != nil {
		return "", fmt.Errorf("new bom: %w", err)
	}
	if reflect.DeepEqual(a, b) {
		return "", nil
	}
	ca, cb := components(a), components(b)
	var out []string
	for _, c := range cb {
		if !contains(ca, c) {
			out = append(out, "+"+c)
		}
	}
	for _, c := range ca {
		if !contains(cb, c) {
			out = append(out, "-"+c)
		}
	}
	if len(out) == 0 {
		return "content", nil
	}
	return strings.Join(out, ", "), nil
}

// components lists "type name version" of the document's components,
// sorted.
func components(doc map[string]any) []string {
	list, _ := doc["components"].([]any)
	var out []string
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		s := strings.TrimSpace(fmt.Sprintf("%v %v %v", str(m["type"]), str(m["name"]), str(m["version"])))
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}
