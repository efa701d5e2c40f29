package collector

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// path is a compiled profile path: dotted segments, each a literal key, "*"
// (every map key in sorted order, or every list item in order) or "(a|b)"
// (the listed map keys, in the listed order). A path is either absolute
// ("$." prefix, from the object root) or relative to a component, in which
// case it may first climb the component path with "../" steps.
type path struct {
	raw      string
	absolute bool
	up       int
	segs     []segment
}

type segment struct {
	key  string   // literal key (or list index, if numeric)
	any  bool     // "*"
	alts []string // "(a|b)"
}

// step is one value reached while walking a path, with its locator.
type step struct {
	val any
	loc string
}

// match is the result of walking a path: the chain of steps from the start
// (chain[0] is the starting point) to the value, and the key or index the
// last wildcard matched.
type match struct {
	chain []step
	key   string
}

func (m match) value() any      { return m.chain[len(m.chain)-1].val }
func (m match) locator() string { return m.chain[len(m.chain)-1].loc }

// plainKey reports whether key can be written after a dot in a locator.
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func compilePath(raw string) (path, error) {
	p := path{raw: raw}
	s := raw
	switch {
	case s == "":
		return p, fmt.Errorf("empty path")
	case strings.HasPrefix(s, "$."):
		p.absolute = true
		s = s[2:]
	default:
		for strings.HasPrefix(s, "../") {
			p.up++
			s = s[3:]
		}
	}
	if s == "" {
		return p, fmt.Errorf("path %q: nothing after the prefix", raw)
	}
	parts, err := splitPath(raw, s)
	if err != nil {
		return p, err
	}
	for _, part := range parts {
		if len(part) >= 2 && part[0] == '\'' && part[len(part)-1] == '\'' {
			p.segs = append(p.segs, segment{key: part[1 : len(part)-1]})
			continue
		}
		switch {
		case part == "":
			return p, fmt.Errorf("path %q: empty segment", raw)
		case part == "*":
			p.segs = append(p.segs, segment{any: true})
		case strings.HasPrefix(part, "(") || strings.HasSuffix(part, ")"):
			if !strings.HasPrefix(part, "(") || !strings.HasSuffix(part, ")") || len(part) < 3 {
				return p, fmt.Errorf("path %q: segment %q is not of the form (a|b)", raw, part)
			}
			alts := strings.Split(part[1:len(part)-1], "|")
			if slices.Contains(alts, "") {
				return p, fmt.Errorf("path %q: empty alternative in %q", raw, part)
			}
			p.segs = append(p.segs, segment{alts: alts})
		default:
			p.segs = append(p.segs, segment{key: part})
		}
	}
	return p, nil
}

// splitPath splits a path at its dots; a segment in single quotes may hold
// dots and slashes: metadata.annotations.'kaito.sh/runtime'.
func splitPath(raw, s string) ([]string, error) {
	var parts []string
	for len(s) > 0 {
		if s[0] == '\'' {
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed quote", raw)
			}
			parts = append(parts, s[:end+2])
			s = s[end+2:]
			if s != "" {
				if s[0] != '.' {
					return nil, fmt.Errorf("path %q: a quoted segment must end at a dot", raw)
				}
				s = s[1:]
				if s == "" {
					return nil, fmt.Errorf("path %q: empty segment", raw)
				}
			}
			continue
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			parts = append(parts, s)
			break
		}
		parts = append(parts, s[:i])
		s = s[i+1:]
		if s == "" {
			parts = append(parts, "")
		}
	}
	return parts, nil
}

// walk follows p from a starting chain: the object root for an absolute
// path, else the component's chain (climbed by p.up). It never fails: values
// of the wrong shape simply do not match.
func (p path) walk(root any, from []step) []match {
	var start []step
	switch {
	case p.absolute || from == nil:
		start = []step{{val: root}}
	case p.up >= len(from):
		return nil
	default:
		start = from[:len(from)-p.up]
	}
	out := []match{{chain: start}}
	for _, seg := range p.segs {
		var next []match
		for _, m := range out {
			next = append(next, seg.follow(m)...)
		}
		if len(next) == 0 {
			return nil
		}
		out = next
	}
	return out
}

func (s segment) follow(m match) []match {
	cur := m.value()
	loc := m.locator()
	extend := func(v any, l, key string, wild bool) match {
		chain := make([]step, len(m.chain), len(m.chain)+1)
		copy(chain, m.chain)
		chain = append(chain, step{val: v, loc: l})
		k := m.key
		if wild {
			k = key
		}
		return match{chain: chain, key: k}
	}
	switch c := cur.(type) {
	case map[string]any:
		var keys []string
		switch {
		case s.any:
			keys = make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		case s.alts != nil:
			keys = s.alts
		default:
			keys = []string{s.key}
		}
		var out []match
		for _, k := range keys {
			v, ok := c[k]
			if !ok || v == nil {
				continue
			}
			out = append(out, extend(v, joinKey(loc, k), k, s.any || s.alts != nil))
		}
		return out
	case []any:
		if s.alts != nil {
			return nil
		}
		if !s.any {
			i, err := strconv.Atoi(s.key)
			if err != nil || i < 0 || i >= len(c) || c[i] == nil {
				return nil
			}
			return []match{extend(c[i], joinIndex(loc, i), s.key, false)}
		}
		out := make([]match, 0, len(c))
		for i, v := range c {
			if v == nil {
				continue
			}
			out = append(out, extend(v, joinIndex(loc, i), strconv.Itoa(i), true))
		}
		return out
	}
	return nil
}

func joinKey(loc, key string) string {
	if !plainKey(key) {
		return loc + "[" + strconv.Quote(key) + "]"
	}
	if loc == "" {
		return key
	}
	return loc + "." + key
}

func joinIndex(loc string, i int) string { return loc + "[" + strconv.Itoa(i) + "]" }
