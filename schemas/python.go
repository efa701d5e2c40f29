package schemas

import (
	"sort"
	"strings"
)

// PythonCall is one call found in Python source (python -c "..."): its
// name and the arguments whose values are string literals. The collector
// keeps only such calls of a script (PythonCallsText), so that what reaches
// an event is what the transformer's download rules read; the transformer
// reads them back with PythonCalls.
type PythonCall struct {
	Name string
	// Positional holds the positional arguments, "" for one that is not a
	// string literal.
	Positional []string
	// Keywords holds the keyword arguments that are string literals.
	Keywords map[string]string
}

// Arg is the keyword argument named keyword or, when there is none and
// position >= 0, the positional argument at position; "" when neither is
// a string literal.
func (c PythonCall) Arg(keyword string, position int) string {
	if v, ok := c.Keywords[keyword]; ok {
		return v
	}
	if position >= 0 && position < len(c.Positional) {
		return c.Positional[position]
	}
	return ""
}

// maxPythonSource bounds the source PythonCalls reads.
const maxPythonSource = 64 << 10

// PythonCalls finds the calls of the functions names in src, in order
// ("snapshot_download(repo_id='org/x', revision='abc')", also as
// "huggingface_hub.snapshot_download(...)"). It never fails: what it cannot
// read is left out.
func PythonCalls(src string, names []string) []PythonCall {
	if len(src) > maxPythonSource {
		src = src[:maxPythonSource]
	}
	var out []PythonCall
	for i := 0; i < len(src); {
		name, open := nextCall(src[i:], names)
		if open < 0 {
			break
		}
		start := i + open + 1
		end := closing(src, start)
		if end < 0 {
			break
		}
		out = append(out, parseCall(name, src[start:end]))
		i = end + 1
	}
	return out
}

// nextCall finds the first "name(" in s for one of names, not inside a
// longer identifier; it returns the name and the index of its "(".
func nextCall(s string, names []string) (string, int) {
	best, bestName := -1, ""
	for _, n := range names {
		for from := 0; ; {
			j := strings.Index(s[from:], n+"(")
			if j < 0 {
				break
			}
			j += from
			if j == 0 || !identByte(s[j-1]) {
				if best < 0 || j < best {
					best, bestName = j, n
				}
				break
			}
			from = j + 1
		}
	}
	if best < 0 {
		return "", -1
	}
	return bestName, best + len(bestName)
}

func identByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// closing is the index of the ")" that closes the call whose arguments
// start at start, past strings and nested brackets; -1 when none does.
func closing(s string, start int) int {
	depth := 0
	for i := start; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			j := endOfString(s, i)
			if j < 0 {
				return -1
			}
			i = j
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				if c == ')' {
					return i
				}
				return -1
			}
			depth--
		}
	}
	return -1
}

// endOfString is the index of the quote that closes the string literal
// opening at i.
func endOfString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j
		}
	}
	return -1
}

// parseCall reads the arguments of one call.
func parseCall(name, args string) PythonCall {
	c := PythonCall{Name: name, Keywords: map[string]string{}}
	for _, a := range splitArgs(args) {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if k, v, ok := keywordArg(a); ok {
			if s, lit := literal(v); lit {
				c.Keywords[k] = s
			}
			continue
		}
		s, _ := literal(a)
		c.Positional = append(c.Positional, s)
	}
	return c
}

// splitArgs splits at the commas outside strings and brackets.
func splitArgs(s string) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"':
			if j := endOfString(s, i); j >= 0 {
				i = j
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[last:i])
				last = i + 1
			}
		}
	}
	return append(out, s[last:])
}

// keywordArg splits "name=value" (not "==").
func keywordArg(a string) (string, string, bool) {
	i := strings.IndexByte(a, '=')
	if i <= 0 || i+1 < len(a) && a[i+1] == '=' {
		return "", "", false
	}
	k := strings.TrimSpace(a[:i])
	for j := 0; j < len(k); j++ {
		if !identByte(k[j]) {
			return "", "", false
		}
	}
	return k, strings.TrimSpace(a[i+1:]), true
}

// literal is the value of a Python string literal (with an optional r, b
// or u prefix), and whether v is one: one literal, not an expression that
// starts and ends with quotes ("a" + name + "b").
func literal(v string) (string, bool) {
	v = strings.TrimSpace(v)
	prefix := 0
	for prefix < len(v) && prefix < 2 && strings.IndexByte("rRbBuU", v[prefix]) >= 0 {
		prefix++
	}
	raw := strings.ContainsAny(v[:prefix], "rR")
	v = v[prefix:]
	if len(v) < 2 || (v[0] != '\'' && v[0] != '"') || endOfString(v, 0) != len(v)-1 {
		return "", false
	}
	body := v[1 : len(v)-1]
	if raw {
		return body, true
	}
	return unescape(body), true
}

// unescape decodes the escapes of a Python string body that a model name
// or a path may hold; an unknown escape is kept as written, as Python does.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// PythonCallsText writes the calls of names found in src back as Python,
// each with only its string-literal positionals and the keywords in keep,
// values through RedactText, joined by "; ". Everything else in src (other
// statements, tokens passed as variables or other keywords) is left out;
// "" when there is no such call.
func PythonCallsText(src string, names, keep []string) string {
	allowed := map[string]bool{}
	for _, k := range keep {
		allowed[k] = true
	}
	var parts []string
	for _, c := range PythonCalls(src, names) {
		var args []string
		for _, p := range c.Positional {
			if p == "" {
				// Not a literal: its place is kept, so that the next
				// positional stays where a reader looks for it.
				args = append(args, "None")
				continue
			}
			args = append(args, pyQuote(RedactText(p)))
		}
		keys := make([]string, 0, len(c.Keywords))
		for k := range c.Keywords {
			if allowed[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, k+"="+pyQuote(RedactText(c.Keywords[k])))
		}
		parts = append(parts, c.Name+"("+strings.Join(args, ", ")+")")
	}
	return strings.Join(parts, "; ")
}

// pyQuote writes s as a Python string literal that literal reads back.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
