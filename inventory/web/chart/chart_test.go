package chart

import (
	"encoding/xml"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// node is any XML element, read back from a chart.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns the elements under n (n included), depth first, for which keep is true.
func (n node) all(keep func(node) bool) []node {
	var out []node
	if keep(n) {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, c.all(keep)...)
	}
	return out
}

// child returns n's first child element named name.
func (n node) child(name string) (node, bool) {
	for _, c := range n.Children {
		if c.XMLName.Local == name {
			return c, true
		}
	}
	return node{}, false
}

func named(name string) func(node) bool {
	return func(n node) bool { return n.XMLName.Local == name }
}

func bars(n node) []node {
	return n.all(func(n node) bool { return n.XMLName.Local == "rect" && n.attr("class") == "bar" })
}

// parse reads a chart with encoding/xml and checks what every chart must
// have: an svg root with role="img", a viewBox, width="100%" and no other
// size, labelled by its own <title> and <desc>.
func parse(t *testing.T, h template.HTML) node {
	t.Helper()
	var root node
	d := xml.NewDecoder(strings.NewReader(string(h)))
	d.Strict = true
	if err := d.Decode(&root); err != nil {
		t.Fatalf("parse chart: %v\n%s", err, h)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root is <%s>, want <svg>", root.XMLName.Local)
	}
	if got := root.attr("role"); got != "img" {
		t.Errorf("role = %q, want img", got)
	}
	if got := root.attr("width"); got != "100%" {
		t.Errorf("width = %q, want 100%%", got)
	}
	if got := root.attr("height"); got != "" {
		t.Errorf("height = %q, want none", got)
	}
	if vb := strings.Fields(root.attr("viewBox")); len(vb) != 4 {
		t.Errorf("viewBox = %q", root.attr("viewBox"))
	}
	ids := strings.Fields(root.attr("aria-labelledby"))
	if len(ids) != 2 {
		t.Fatalf("aria-labelledby = %q, want the title and desc ids", root.attr("aria-labelledby"))
	}
	title, ok := root.child("title")
	if !ok || title.attr("id") != ids[0] {
		t.Errorf("first id %q is not the <title>'s (%q)", ids[0], title.attr("id"))
	}
	desc, ok := root.child("desc")
	if !ok || desc.attr("id") != ids[1] {
		t.Errorf("second id %q is not the <desc>'s (%q)", ids[1], desc.attr("id"))
	}
	return root
}

func sampleBars() []Bar {
	return []Bar{
		{Label: "vllm", Value: 12, Href: "/workloads?runtime=vllm"},
		{Label: "tgi", Value: 30, Href: "/workloads?runtime=tgi"},
		{Label: "ollama", Value: 3},
		{Label: "triton", Value: 7, Href: "https://example.com/triton"},
		{Label: "sglang", Value: 0},
	}
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestBarsDrawsEveryBar(t *testing.T) {
	in := sampleBars()
	root := parse(t, Bars("Runtimes", "Workloads per runtime.", in, 0))
	rs := bars(root)
	if len(rs) != len(in) {
		t.Fatalf("%d bars, want %d", len(rs), len(in))
	}
	for i, r := range rs {
		title, ok := r.child("title")
		want := in[i].Label + ": " + strconv.Itoa(in[i].Value)
		if !ok || title.Text != want {
			t.Errorf("bar %d title = %q, want %q", i, title.Text, want)
		}
	}
	title, _ := root.child("title")
	desc, _ := root.child("desc")
	if title.Text != "Runtimes" || desc.Text != "Workloads per runtime." {
		t.Errorf("title, desc = %q, %q", title.Text, desc.Text)
	}
	links := root.all(named("a"))
	if len(links) != 3 {
		t.Errorf("%d links, want 3", len(links))
	}
	for _, a := range links {
		if len(bars(a)) != 1 || len(a.all(func(n node) bool { return n.attr("class") == "label" })) != 1 {
			t.Errorf("link %q does not hold one bar and its label", a.attr("href"))
		}
	}
}

func TestBarsOther(t *testing.T) {
	in := sampleBars()
	copyIn := append([]Bar(nil), in...)
	root := parse(t, Bars("Runtimes", "", in, 3))
	rs := bars(root)
	if len(rs) != 4 {
		t.Fatalf("%d bars, want max+1 = 4", len(rs))
	}
	title, _ := rs[3].child("title")
	if want := "other (2): 7"; title.Text != want {
		t.Errorf("last bar title = %q, want %q", title.Text, want)
	}
	for _, a := range root.all(named("a")) {
		if strings.HasPrefix(a.all(named("title"))[0].Text, "other") {
			t.Errorf("other bar has link %q", a.attr("href"))
		}
	}
	for i := range in {
		if in[i] != copyIn[i] {
			t.Errorf("Bars changed its argument at %d: %+v", i, in[i])
		}
	}

	// max at or above the number of bars draws them all
	for _, max := range []int{5, 6} {
		if n := len(bars(parse(t, Bars("x", "", in, max)))); n != 5 {
			t.Errorf("max %d: %d bars, want 5", max, n)
		}
	}
}

func TestBarsProportional(t *testing.T) {
	in := sampleBars()
	rs := bars(parse(t, Bars("Runtimes", "", in, 0)))
	widths := make([]float64, len(rs))
	for i, r := range rs {
		w, err := strconv.ParseFloat(r.attr("width"), 64)
		if err != nil {
			t.Fatalf("bar %d width %q: %v", i, r.attr("width"), err)
		}
		widths[i] = w
	}
	widest := 0
	for i := range widths {
		if widths[i] > widths[widest] {
			widest = i
		}
	}
	if in[widest].Value != 30 {
		t.Errorf("widest bar is %q (%d), want the largest value", in[widest].Label, in[widest].Value)
	}
	// 12/30 of the widest, within rounding
	if got, want := widths[0], widths[1]*12/30; got < want-0.02 || got > want+0.02 {
		t.Errorf("width of 12 = %v, want %v", got, want)
	}
	if widths[4] != 0 {
		t.Errorf("width of 0 = %v, want 0", widths[4])
	}
	if w := widths[1]; w > width {
		t.Errorf("widest bar %v is wider than the chart", w)
	}
}

func TestBarsNegativeAndAllZero(t *testing.T) {
	rs := bars(parse(t, Bars("x", "", []Bar{{Label: "a", Value: -4}, {Label: "b"}}, 0)))
	for _, r := range rs {
		if r.attr("width") != "0" {
			t.Errorf("bar width = %q, want 0", r.attr("width"))
		}
	}
}

func TestEscaping(t *testing.T) {
	evil := []string{`<script>alert(1)</script>`, `"&'`, "</title><svg onload=alert(1)>", "tab\tand\x00nul\x1b and \xff bad utf-8"}
	for _, s := range evil {
		h := string(Bars(s, s, []Bar{{Label: s, Value: 1, Href: "/q?x=" + s}}, 0))
		if strings.Contains(h, "<script") || strings.Contains(h, "<svg onload") || strings.Contains(h, `"&'`) {
			t.Errorf("label %q not escaped:\n%s", s, h)
		}
		root := parse(t, template.HTML(h))
		texts := root.all(func(n node) bool { return n.attr("class") == "label" })
		want := strings.ToValidUTF8(strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' {
				return -1
			}
			return r
		}, s), "\uFFFD")
		if len(texts) != 1 || strings.TrimSpace(texts[0].Text) != want {
			t.Errorf("label drawn as %+v, want %q", texts, want)
		}
		title, _ := root.child("title")
		if title.Text != want {
			t.Errorf("title = %q, want %q", title.Text, want)
		}
		d := string(Days(s, s, []Point{{Day: day("2024-05-01"), Value: 1}}))
		if strings.Contains(d, "<script") || strings.Contains(d, `"&'`) {
			t.Errorf("days title %q not escaped:\n%s", s, d)
		}
		parse(t, template.HTML(d))
	}
}

func TestHref(t *testing.T) {
	for _, c := range []struct {
		href string
		keep bool
	}{
		{"/workloads?runtime=vllm&since=2024-05-01", true},
		{"workloads?runtime=vllm", true},
		{"?runtime=vllm", true},
		{"#top", true},
		{"../x/y:z", true},
		{"http://example.com/a", true},
		{"HTTPS://example.com/a?b=c", true},
		{"//example.com/a", true},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{" javascript:alert(1)", false},
		{"\tjavascript:alert(1)", false},
		{"java\tscript:alert(1)", false},
		{"java\nscript:alert(1)", false},
		{"javascript&colon;alert(1)", true}, // no scheme: a relative path, harmless
		{"data:text/html,<script>alert(1)</script>", false},
		{"vbscript:msgbox", false},
		{"mailto:a@example.com", false},
		{"foo:bar/baz", false},
		{"%zz", false},
	} {
		got := safeHref(c.href)
		if c.keep && got != c.href || !c.keep && got != "" {
			t.Errorf("safeHref(%q) = %q, keep %v", c.href, got, c.keep)
		}
		root := parse(t, Bars("x", "", []Bar{{Label: "a", Value: 1, Href: c.href}}, 0))
		links := root.all(named("a"))
		switch {
		case c.keep && (len(links) != 1 || links[0].attr("href") != c.href):
			t.Errorf("href %q: links %+v, want it kept", c.href, links)
		case !c.keep && len(links) != 0:
			t.Errorf("href %q: drawn as a link, want it dropped", c.href)
		}
		if len(bars(root)) != 1 {
			t.Errorf("href %q: bar not drawn", c.href)
		}
	}
}

func TestTruncate(t *testing.T) {
	long := "registry.example.com/team/inference/model-server:v1.2.3"
	root := parse(t, Bars("x", "", []Bar{{Label: long, Value: 2}, {Label: strings.Repeat("é", 32), Value: 1}}, 0))
	labels := root.all(func(n node) bool { return n.attr("class") == "label" })
	if len(labels) != 2 {
		t.Fatalf("%d labels", len(labels))
	}
	drawn := strings.TrimSpace(labels[0].Text)
	if n := utf8.RuneCountInString(drawn); n > labelRunes || !strings.HasSuffix(drawn, "…") || !strings.HasPrefix(long, strings.TrimSuffix(drawn, "…")) {
		t.Errorf("long label drawn as %q (%d characters)", drawn, n)
	}
	if title, _ := labels[0].child("title"); title.Text != long+": 2" {
		t.Errorf("label title = %q, want the full label", title.Text)
	}
	if title, _ := bars(root)[0].child("title"); title.Text != long+": 2" {
		t.Errorf("bar title = %q, want the full label", title.Text)
	}
	if got := strings.TrimSpace(labels[1].Text); got != strings.Repeat("é", 32) {
		t.Errorf("32-character label drawn as %q, want it whole", got)
	}
}

func TestEmpty(t *testing.T) {
	for name, h := range map[string]template.HTML{
		"bars nil":   Bars("Runtimes", "None yet.", nil, 5),
		"bars empty": Bars("Runtimes", "None yet.", []Bar{}, 0),
		"days nil":   Days("Changes", "None yet.", nil),
	} {
		root := parse(t, h)
		if n := len(bars(root)); n != 0 {
			t.Errorf("%s: %d bars", name, n)
		}
		texts := root.all(named("text"))
		if len(texts) != 1 || texts[0].Text != "no data" {
			t.Errorf("%s: texts %+v, want one \"no data\"", name, texts)
		}
	}
}

func TestDaysFillsGaps(t *testing.T) {
	// unsorted, two points on one day (one not at midnight, one in another
	// zone), spanning 2024-02-25 to 2024-03-05: 10 days across a leap day
	east := time.FixedZone("east", 5*60*60)
	points := []Point{
		{Day: day("2024-03-05"), Value: 4},
		{Day: day("2024-02-25"), Value: 2},
		{Day: day("2024-02-28").Add(13 * time.Hour), Value: 1},
		{Day: time.Date(2024, 2, 29, 2, 0, 0, 0, east), Value: 5}, // 2024-02-28 21:00 UTC
	}
	root := parse(t, Days("Changes", "Changes per day.", points))
	cols := bars(root)
	if len(cols) != 10 {
		t.Fatalf("%d columns, want 10", len(cols))
	}
	want := map[string]string{
		"2024-02-25": "2 changes", "2024-02-28": "6 changes", "2024-03-05": "4 changes",
	}
	start := day("2024-02-25")
	prevX := -1.0
	for i, c := range cols {
		d := start.AddDate(0, 0, i).Format(time.DateOnly)
		w, ok := want[d]
		if !ok {
			w = "0 changes"
		}
		if title, _ := c.child("title"); title.Text != d+": "+w {
			t.Errorf("column %d title = %q, want %q", i, title.Text, d+": "+w)
		}
		x, _ := strconv.ParseFloat(c.attr("x"), 64)
		if x <= prevX {
			t.Errorf("column %d at x %v, not right of the one before (%v)", i, x, prevX)
		}
		prevX = x
		if (w == "0 changes") != (c.attr("height") == "0") {
			t.Errorf("column %d (%s) height %q", i, w, c.attr("height"))
		}
	}
	// the largest day's column is the full height, the others in proportion
	for i, want := range map[int]float64{3: plotBase - plotTop, 0: (plotBase - plotTop) * 2.0 / 6, 9: (plotBase - plotTop) * 4.0 / 6} {
		h, _ := strconv.ParseFloat(cols[i].attr("height"), 64)
		y, _ := strconv.ParseFloat(cols[i].attr("y"), 64)
		if h < want-0.01 || h > want+0.01 || y+h < plotBase-0.01 || y+h > plotBase+0.01 {
			t.Errorf("column %d: y %v height %v, want height %v on the base line", i, y, h, want)
		}
	}

	axis := map[string]bool{}
	for _, n := range root.all(func(n node) bool { return n.XMLName.Local == "text" && n.attr("class") == "axis" }) {
		axis[n.Text] = true
	}
	for _, s := range []string{"2024-02-25", "2024-02-29", "2024-03-05", "6", "0"} {
		if !axis[s] {
			t.Errorf("axis lacks %q: %v", s, axis)
		}
	}
}

func TestDaysOneAndTwo(t *testing.T) {
	one := parse(t, Days("x", "", []Point{{Day: day("2024-05-01"), Value: 1}}))
	if cols := bars(one); len(cols) != 1 {
		t.Errorf("one day: %d columns", len(cols))
	} else if title, _ := cols[0].child("title"); title.Text != "2024-05-01: 1 change" {
		t.Errorf("one day: title %q", title.Text)
	}
	two := parse(t, Days("x", "", []Point{{Day: day("2024-05-01")}, {Day: day("2024-05-02")}}))
	var dates []string
	for _, n := range two.all(named("text")) {
		if strings.HasPrefix(n.Text, "2024") {
			dates = append(dates, n.Text)
		}
	}
	if strings.Join(dates, " ") != "2024-05-01 2024-05-02" {
		t.Errorf("two days: dates %q", dates)
	}
}

func TestDaysYear(t *testing.T) {
	start := day("2023-04-01")
	var points []Point
	for i := range 400 {
		points = append(points, Point{Day: start.AddDate(0, 0, i), Value: (i*37)%1000 + 1000})
	}
	h := Days("Changes", "Changes per day over 400 days.", points)
	if len(h) >= 60<<10 {
		t.Errorf("400 days take %d bytes, want < 60 KB", len(h))
	}
	t.Logf("400 days: %d bytes", len(h))
	root := parse(t, h)
	cols := bars(root)
	if len(cols) != 400 {
		t.Fatalf("%d columns, want 400", len(cols))
	}
	last := cols[len(cols)-1]
	x, _ := strconv.ParseFloat(last.attr("x"), 64)
	w, _ := strconv.ParseFloat(last.attr("width"), 64)
	if w <= 0 || x+w > width+0.01 {
		t.Errorf("last column x %v width %v, outside the viewBox width %d", x, w, width)
	}
	if vb := root.attr("viewBox"); vb != fmt.Sprintf("0 0 %d %d", width, daysHeight) {
		t.Errorf("viewBox = %q", vb)
	}
}

func TestDaysCapsSpan(t *testing.T) {
	root := parse(t, Days("x", "", []Point{{Day: time.Time{}, Value: 1}, {Day: day("2024-05-01"), Value: 1}}))
	if n := len(bars(root)); n != MaxDays {
		t.Errorf("%d columns, want MaxDays = %d", n, MaxDays)
	}
}

func TestIDs(t *testing.T) {
	id := func(h template.HTML) string {
		return strings.Fields(parse(t, h).attr("aria-labelledby"))[0]
	}
	in := sampleBars()
	a, b := id(Bars("Runtimes", "d", in, 0)), id(Bars("Models", "d", in, 0))
	if a == b {
		t.Errorf("titles Runtimes and Models share id %q", a)
	}
	if c := id(Bars("Runtimes", "d", in[:1], 0)); c != a {
		t.Errorf("same title, ids %q and %q: want ids from the title", a, c)
	}
	p := []Point{{Day: day("2024-05-01"), Value: 1}}
	if c, d := id(Days("Changes", "d", p)), id(Days("Deletions", "d", p)); c == d {
		t.Errorf("titles Changes and Deletions share id %q", c)
	}
	if !regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`).MatchString(a) {
		t.Errorf("id %q is not a plain name", a)
	}
}

func TestDeterministic(t *testing.T) {
	in := sampleBars()
	if a, b := Bars("Runtimes", "d", in, 3), Bars("Runtimes", "d", in, 3); a != b {
		t.Errorf("Bars differs between calls:\n%s\n%s", a, b)
	}
	var points []Point
	for i := 0; i < 60; i += 3 {
		points = append(points, Point{Day: day("2024-01-01").AddDate(0, 0, i*7%60), Value: i})
	}
	if a, b := Days("Changes", "d", points), Days("Changes", "d", points); a != b {
		t.Errorf("Days differs between calls:\n%s\n%s", a, b)
	}
}

func TestNoFixedColours(t *testing.T) {
	paint := regexp.MustCompile(`\b(fill|stroke|color|style)="([^"]*)"`)
	var points []Point
	for i := range 30 {
		points = append(points, Point{Day: day("2024-01-01").AddDate(0, 0, i*2), Value: i})
	}
	for _, h := range []template.HTML{Bars("x", "", sampleBars(), 2), Days("x", "", points), Bars("x", "", nil, 0)} {
		for _, m := range paint.FindAllStringSubmatch(string(h), -1) {
			if m[1] == "style" || m[2] != "currentColor" {
				t.Errorf("fixed colour %s", m[0])
			}
		}
	}
}

func BenchmarkDays400(b *testing.B) {
	start := day("2023-04-01")
	points := make([]Point, 400)
	for i := range points {
		points[i] = Point{Day: start.AddDate(0, 0, i), Value: i}
	}
	b.ReportAllocs()
	for b.Loop() {
		Days("Changes", "Changes per day.", points)
	}
}
