package chart

import (
	"html/template"
	"strconv"
	"strings"
)

// Bar is one labelled value.
type Bar struct {
	Label string
	Value int
	Href  string // optional: a link the bar and its label go to (e.g. a filtered inventory view); "" for none
}

// Layout of a bar chart, in viewBox units.
const (
	rowHeight  = 24
	barHeight  = 16
	padTop     = 4
	labelEnd   = 226 // labels are right-aligned here
	barStart   = 234
	charWidth  = 7.5 // a generous width of a digit at font-size 12
	valueSpace = 8   // between a bar's end and its value
)

// Bars draws a horizontal bar chart: one row per bar, in the order given,
// label on the left, bar, value at the end. title is the accessible name
// (<title>), desc a sentence describing it (<desc>). When max > 0 and
// there are more than max bars, the first max are drawn and the rest are
// summed into one "other (N)" bar without link, N the number summed; order
// bars before calling to choose which are kept. Bar lengths are
// proportional to the values; negative values draw no bar. No bars draw a
// chart that says "no data".
func Bars(title, desc string, bars []Bar, max int) template.HTML {
	if len(bars) == 0 {
		return empty("bars", title, desc)
	}
	if max > 0 && len(bars) > max {
		rest := bars[max:]
		other := Bar{Label: "other (" + strconv.Itoa(len(rest)) + ")"}
		for _, r := range rest {
			other.Value += r.Value
		}
		bars = append(bars[:max:max], other)
	}

	top, widest := 0, 0
	for _, r := range bars {
		top = maxInt(top, r.Value)
		widest = maxInt(widest, len(strconv.Itoa(r.Value)))
	}
	room := float64(width - barStart - valueSpace - 2)
	room -= float64(widest) * charWidth

	var b strings.Builder
	b.Grow(256 + 256*len(bars))
	open(&b, "bars", title, desc, float64(len(bars)*rowHeight+2*padTop))
	for i, r := range bars {
		y := float64(padTop + i*rowHeight)
		w := 0.0
		if top > 0 && r.Value > 0 {
			w = room * float64(r.Value) / float64(top)
			if w < 1 {
				w = 1 // a positive value stays visible
			}
		}
		tip := escape(r.Label + ": " + strconv.Itoa(r.Value))
		href := safeHref(r.Href)
		if href != "" {
			b.WriteString(`<a href="`)
			b.WriteString(escape(href))
			b.WriteString(`">`)
		} else {
			b.WriteString(`<g>`)
		}
		b.WriteString(`<text class="label" x="`)
		b.WriteString(num(labelEnd))
		b.WriteString(`" y="`)
		b.WriteString(num(y + rowHeight/2 + 4))
		b.WriteString(`" text-anchor="end"><title>`)
		b.WriteString(tip)
		b.WriteString(`</title>`)
		b.WriteString(escape(truncate(r.Label)))
		b.WriteString(`</text><rect class="bar" x="`)
		b.WriteString(num(barStart))
		b.WriteString(`" y="`)
		b.WriteString(num(y + (rowHeight-barHeight)/2))
		b.WriteString(`" width="`)
		b.WriteString(num(w))
		b.WriteString(`" height="`)
		b.WriteString(num(barHeight))
		b.WriteString(`"><title>`)
		b.WriteString(tip)
		b.WriteString(`</title></rect><text class="value" x="`)
		b.WriteString(num(barStart + w + valueSpace))
		b.WriteString(`" y="`)
		b.WriteString(num(y + rowHeight/2 + 4))
		b.WriteString(`">`)
		b.WriteString(strconv.Itoa(r.Value))
		b.WriteString(`</text>`)
		if href != "" {
			b.WriteString("</a>\n")
		} else {
			b.WriteString("</g>\n")
		}
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
