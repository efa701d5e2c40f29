package chart

import (
	"html/template"
	"strconv"
	"strings"
	"time"
)

// Point is one day's count.
type Point struct {
	Day   time.Time // midnight UTC
	Value int
}

// Layout of a day chart, in viewBox units.
const (
	daysHeight = 200
	plotLeft   = 48
	plotRight  = width - 8
	plotTop    = 16
	plotBase   = 170
	dateY      = 190
	maxColumn  = 40
	dateWidth  = 72 // a generous width of a YYYY-MM-DD date
)

// MaxDays is the most days Days draws: when the points span more, only
// the last MaxDays days are drawn. It keeps a stray early date (a zero
// time) from drawing thousands of empty columns.
const MaxDays = 3660

const secondsPerDay = 24 * 60 * 60

// Days draws a vertical bar (column) chart of counts per day, days in
// order, missing days drawn as zero (the gaps between the first and the
// last day are filled), with an axis showing the first, middle and last
// date (YYYY-MM-DD) and the maximum value. Each column carries
// <title>DATE: N changes</title> ("1 change" for one) so hovering shows it
// without JavaScript. Points need not be sorted; each is counted on its
// day in UTC, and points on the same day are summed. Columns share the
// fixed viewBox width, so a year or more of days stays one chart of
// narrow columns. No points draw a chart that says "no data".
func Days(title, desc string, points []Point) template.HTML {
	if len(points) == 0 {
		return empty("days", title, desc)
	}
	counts := make(map[int64]int, len(points))
	first, last := dayOf(points[0].Day), dayOf(points[0].Day)
	for _, p := range points {
		d := dayOf(p.Day)
		counts[d] += p.Value
		first, last = min(first, d), max(last, d)
	}
	first = max(first, last-MaxDays+1)
	n := int(last - first + 1)

	top := 0
	for d := first; d <= last; d++ {
		top = max(top, counts[d])
	}

	// Each day has a slot of the plot's width; its column fills the slot
	// when slots are narrow, and leaves a gap, at most maxColumn wide, when
	// they are not.
	colW := float64(plotRight-plotLeft) / float64(n)
	gap := 0.0
	if colW >= 4 {
		gap = max(colW/5, colW-maxColumn)
	}
	plotH := float64(plotBase - plotTop)

	var b strings.Builder
	b.Grow(1024 + 112*n)
	open(&b, "days", title, desc, daysHeight)

	// axis: the maximum at the top, zero at the base line
	b.WriteString(`<g class="axis" stroke="currentColor">`)
	line(&b, plotLeft, plotTop, plotRight, plotTop, ` stroke-opacity=".35" stroke-dasharray="2 3"`)
	line(&b, plotLeft, plotBase, plotRight, plotBase, "")
	b.WriteString("</g>\n")
	label(&b, "axis", plotLeft-6, plotTop+4, "end", strconv.Itoa(top))
	label(&b, "axis", plotLeft-6, plotBase+4, "end", "0")

	b.WriteString(`<g class="columns">` + "\n")
	for i := range n {
		d := first + int64(i)
		v := counts[d]
		h := 0.0
		if top > 0 && v > 0 {
			h = max(plotH*float64(v)/float64(top), 1)
		}
		b.WriteString(`<rect class="bar" x="`)
		b.WriteString(num(plotLeft + float64(i)*colW + gap/2))
		b.WriteString(`" y="`)
		b.WriteString(num(plotBase - h))
		b.WriteString(`" width="`)
		b.WriteString(num(colW - gap))
		b.WriteString(`" height="`)
		b.WriteString(num(h))
		b.WriteString(`"><title>`)
		b.WriteString(date(d))
		b.WriteString(": ")
		b.WriteString(strconv.Itoa(v))
		if v == 1 {
			b.WriteString(" change")
		} else {
			b.WriteString(" changes")
		}
		b.WriteString("</title></rect>\n")
	}
	b.WriteString("</g>\n")

	dates(&b, first, last, n, colW)
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// dates draws the first, middle and last dates, each once: under their
// columns when the slots are wide enough, else flush with the plot's ends.
func dates(b *strings.Builder, first, last int64, n int, colW float64) {
	// dates: first, middle and last, each drawn once; under their columns
	// when the slots are wide enough, else flush with the plot's ends
	mid := (n - 1) / 2
	center := func(i int) float64 { return plotLeft + (float64(i)+0.5)*colW }
	if colW >= dateWidth {
		label(b, "axis", center(0), dateY, "middle", date(first))
	} else {
		label(b, "axis", plotLeft, dateY, "start", date(first))
	}
	if n >= 3 {
		label(b, "axis", center(mid), dateY, "middle", date(first+int64(mid)))
	}
	switch {
	case n >= 2 && colW >= dateWidth:
		label(b, "axis", center(n-1), dateY, "middle", date(last))
	case n >= 2:
		label(b, "axis", plotRight, dateY, "end", date(last))
	}
}

// dayOf returns the number of the day t falls on in UTC, counted from
// 1970-01-01.
func dayOf(t time.Time) int64 {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix() / secondsPerDay
}

// date formats a day number as YYYY-MM-DD.
func date(d int64) string {
	return time.Unix(d*secondsPerDay, 0).UTC().Format(time.DateOnly)
}

func line(b *strings.Builder, x1, y1, x2, y2 float64, attrs string) {
	b.WriteString(`<line x1="`)
	b.WriteString(num(x1))
	b.WriteString(`" y1="`)
	b.WriteString(num(y1))
	b.WriteString(`" x2="`)
	b.WriteString(num(x2))
	b.WriteString(`" y2="`)
	b.WriteString(num(y2))
	b.WriteString(`"`)
	b.WriteString(attrs)
	b.WriteString("/>")
}

// label writes a text element; s is escaped.
func label(b *strings.Builder, class string, x, y float64, anchor, s string) {
	b.WriteString(`<text class="`)
	b.WriteString(class)
	b.WriteString(`" x="`)
	b.WriteString(num(x))
	b.WriteString(`" y="`)
	b.WriteString(num(y))
	b.WriteString(`" text-anchor="`)
	b.WriteString(anchor)
	b.WriteString(`">`)
	b.WriteString(escape(s))
	b.WriteString("</text>\n")
}
