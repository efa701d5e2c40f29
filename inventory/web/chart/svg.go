package chart

import (
	"encoding/hex"
	"hash/fnv"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// width is the viewBox width of every chart; drawings scale from it.
const width = 720

// labelRunes is how many characters of a label are drawn; longer labels
// are cut and end with an ellipsis.
const labelRunes = 32

// ids returns the ids of a chart's <title> and <desc>, derived from a hash
// of its kind, title and description.
func ids(kind, title, desc string) (titleID, descID string) {
	h := fnv.New64a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(title))
	h.Write([]byte{0})
	h.Write([]byte(desc))
	base := "chart-" + hex.EncodeToString(h.Sum(nil))
	return base + "-title", base + "-desc"
}

// open writes the svg start tag with its viewBox height, and the <title>
// and <desc> the svg is labelled by.
func open(b *strings.Builder, kind, title, desc string, height float64) {
	titleID, descID := ids(kind, title, desc)
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-`)
	b.WriteString(kind)
	b.WriteString(`" role="img" aria-labelledby="`)
	b.WriteString(titleID)
	b.WriteByte(' ')
	b.WriteString(descID)
	b.WriteString(`" viewBox="0 0 `)
	b.WriteString(num(width))
	b.WriteByte(' ')
	b.WriteString(num(height))
	b.WriteString(`" width="100%" fill="currentColor" font-size="12">`)
	b.WriteString("\n<title id=\"")
	b.WriteString(titleID)
	b.WriteString(`">`)
	b.WriteString(escape(title))
	b.WriteString("</title>\n<desc id=\"")
	b.WriteString(descID)
	b.WriteString(`">`)
	b.WriteString(escape(desc))
	b.WriteString("</desc>\n")
}

// empty returns the chart drawn for no data: its title, its description
// and the words "no data".
func empty(kind, title, desc string) template.HTML {
	var b strings.Builder
	open(&b, kind, title, desc, 40)
	b.WriteString(`<text class="label empty" x="360" y="24" text-anchor="middle">no data</text>`)
	b.WriteString("\n</svg>")
	return template.HTML(b.String())
}

// num formats a coordinate with at most two decimals.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// escape returns s as XML character data or attribute value: the five
// markup characters as references, invalid UTF-8 as U+FFFD, and the
// characters XML 1.0 does not allow (most control characters) dropped.
func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteRune(r)
		case r < 0x20, r == 0x7f,
			r >= 0xd800 && r <= 0xdfff,
			r == 0xfffe, r == 0xffff:
			// not allowed in XML (0x7f is, but means nothing here)
		default:
			b.WriteRune(r) // utf8.RuneError writes U+FFFD
		}
	}
	return b.String()
}

// truncate cuts s to labelRunes characters, the last an ellipsis.
func truncate(s string) string {
	if utf8.RuneCountInString(s) <= labelRunes {
		return s
	}
	r := []rune(s)[:labelRunes-1]
	return strings.TrimRight(string(r), " ") + "…"
}

// safeHref returns href if it is a relative URL or an http or https one,
// and "" for anything else: other schemes (javascript:, data:, vbscript:),
// URLs that do not parse, and URLs starting with whitespace or control
// characters, which browsers strip before reading the scheme.
func safeHref(href string) string {
	if href == "" {
		return ""
	}
	if c := href[0]; c <= ' ' || c == 0x7f {
		return ""
	}
	for i := 0; i < len(href); i++ {
		if c := href[i]; c < ' ' || c == 0x7f {
			return ""
		}
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "":
		// A colon before the first / ? or # would make a browser read a
		// scheme that url.Parse did not.
		head := href
		if i := strings.IndexAny(href, "/?#"); i >= 0 {
			head = href[:i]
		}
		if strings.Contains(head, ":") {
			return ""
		}
		return href
	case "http", "https":
		return href
	}
	return ""
}
