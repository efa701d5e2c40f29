package web_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bomstream/bomstream/inventory/web/browsertest"
)

// TestBrowser walks the pages in headless Chromium, with JavaScript on
// and off (every page must work without it), over the inventory the real
// pipeline built from the corpus and 10,000 generated workloads, and
// saves a screenshot of each page.
func TestBrowser(t *testing.T) {
	dir := corpus(t)
	base := "http://" + serveWeb(t, dir)
	waitFindings(t, base)
	for _, mode := range []struct {
		name     string
		noScript bool
	}{{"javascript", false}, {"no-javascript", true}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := browsertest.Start(t, browsertest.Options{NoScript: mode.noScript})
			t.Run("inventory", func(t *testing.T) { inventoryPage(t, ctx, base) })
			t.Run("filters", func(t *testing.T) { filters(t, ctx, base) })
			t.Run("timeline-and-diff", func(t *testing.T) { timelineAndDiff(t, ctx, base) })
			t.Run("findings", func(t *testing.T) { findingsPage(t, ctx, base) })
			t.Run("fleet", func(t *testing.T) { fleetPage(t, ctx, base) })
		})
	}
}

// text is the visible text of the first element sel selects, spaces
// folded (read through the DOM, which works with scripts off).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	html := browsertest.Get(t, ctx, "read "+sel, chromedp.OuterHTML(chromedp.CSS(sel)))
	return strings.Join(strings.Fields(tags.ReplaceAllString(strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'").Replace(html), " ")), " ")
}

var tags = regexp.MustCompile(`<[^>]*>`)

// rows reads the cells of every row of the table sel selects.
func rows(t *testing.T, ctx context.Context, sel string) [][]string {
	t.Helper()
	html := browsertest.Get(t, ctx, "read "+sel, chromedp.OuterHTML(chromedp.CSS(sel)))
	body := html[strings.Index(html, "<tbody>"):]
	var out [][]string
	for _, tr := range strings.Split(body, "<tr")[1:] {
		var cells []string
		for _, td := range strings.Split(tr, "<td")[1:] {
			cell := td[strings.Index(td, ">")+1:]
			cells = append(cells, strings.Join(strings.Fields(tags.ReplaceAllString(cell, " ")), " "))
		}
		out = append(out, cells)
	}
	return out
}

var countText = regexp.MustCompile(`Workloads 1–(\d+) of (\d+)`)

// total is the "of N" of the inventory page shown.
func total(t *testing.T, ctx context.Context) int {
	t.Helper()
	c := text(t, ctx, "#count")
	m := countText.FindStringSubmatch(c)
	if m == nil {
		t.Fatalf("count reads %q", c)
	}
	var n int
	fmt.Sscan(m[2], &n)
	return n
}

func inventoryPage(t *testing.T, ctx context.Context, base string) {
	browsertest.Do(t, ctx, "open the inventory", chromedp.Navigate(base+"/"))
	if n := total(t, ctx); n < generated+100 {
		t.Errorf("the inventory lists %d serving workloads; want the %d generated and the corpus's", n, generated)
	}
	if got := len(rows(t, ctx, "table.inventory")); got != 100 {
		t.Errorf("first page has %d rows, want 100", got)
	}
	browsertest.Screenshot(t, ctx, "inventory")
	// Sorting by last change, newest first, is a link in the heading.
	browsertest.Follow(t, ctx, `th a[href*="sort=changed"]`)
	browsertest.Follow(t, ctx, `th a[href*="sort=-changed"]`)
	loc := browsertest.Get(t, ctx, "location", chromedp.Location())
	if !strings.Contains(loc, "sort=-changed") {
		t.Errorf("after two clicks on Last change the URL is %s", loc)
	}
	first := rows(t, ctx, "table.inventory")[0]
	if first[3] != demoName {
		t.Errorf("newest change first: row 1 is %q, want %s (revived last)", first, demoName)
	}
	browsertest.Screenshot(t, ctx, "inventory-by-last-change")
	// The next page.
	browsertest.Follow(t, ctx, `a[rel="next"]`)
	if c := text(t, ctx, "#count"); !strings.HasPrefix(c, "Workloads 101–200 of") {
		t.Errorf("page 2 counts %q", c)
	}
}

func filters(t *testing.T, ctx context.Context, base string) {
	// By model, typed into the form and submitted with the keyboard.
	model := genModels[2]
	browsertest.Do(t, ctx, "type a model", chromedp.Navigate(base+"/"), chromedp.SendKeys(chromedp.ID("f-model"), model))
	browsertest.Follow(t, ctx, `form.filters button[type="submit"]`)
	loc := browsertest.Get(t, ctx, "location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Query().Get("model") != model {
		t.Fatalf("the filter is not in the URL: %s", loc)
	}
	if n := total(t, ctx); n != generated/4 {
		t.Errorf("model %s: %d workloads, want %d", model, n, generated/4)
	}
	for _, r := range rows(t, ctx, "table.inventory") {
		if !strings.Contains(r[5], model) {
			t.Errorf("row %q does not serve %s", r, model)
		}
	}
	browsertest.Screenshot(t, ctx, "inventory-by-model")

	// By a runtime range, from a shared URL: the two vLLM versions of the
	// generated fleet, one inside the range and one above it.
	q := url.Values{"runtime": {"vllm>=0.7.70,<0.7.80"}}
	browsertest.Do(t, ctx, "filter by runtime range", chromedp.Navigate(base+"/?"+q.Encode()))
	if n := total(t, ctx); n != generated/4 {
		t.Errorf("vllm>=0.7.70,<0.7.80: %d workloads, want %d", n, generated/4)
	}
	for _, r := range rows(t, ctx, "table.inventory") {
		if r[4] != "vllm 0.7.71" {
			t.Errorf("row %q: runtime is not vllm 0.7.71", r)
		}
	}
	if v := browsertest.Get(t, ctx, "runtime input", chromedp.Value(chromedp.ID("f-runtime"))); v != "vllm>=0.7.70,<0.7.80" {
		t.Errorf("the form shows runtime %q", v)
	}
	browsertest.Screenshot(t, ctx, "inventory-by-runtime-range")

	// A filter that is wrong says why, and lists nothing.
	browsertest.Do(t, ctx, "bad range", chromedp.Navigate(base+"/?runtime="+url.QueryEscape("vllm<<1")))
	if p := text(t, ctx, ".problem"); !strings.Contains(p, "runtime") {
		t.Errorf("a bad range reads %q", p)
	}
}

func timelineAndDiff(t *testing.T, ctx context.Context, base string) {
	// From the inventory, filtered to the namespace, to the workload.
	browsertest.Do(t, ctx, "filter by namespace", chromedp.Navigate(base+"/?namespace="+demoNS))
	browsertest.Follow(t, ctx, `table.inventory a[href$="/`+demoName+`"]`)
	if h := text(t, ctx, "h1"); h != "Deployment "+demoName {
		t.Fatalf("workload page heading %q", h)
	}
	steps := browsertest.Get(t, ctx, "timeline", chromedp.OuterHTML(chromedp.CSS("ol.timeline")))
	var labels []string
	for _, m := range regexp.MustCompile(`<span class="label">([^<]+)</span>`).FindAllStringSubmatch(steps, -1) {
		labels = append(labels, m[1])
	}
	if want := []string{"first seen", "changed", "deleted", "revived"}; strings.Join(labels, ",") != strings.Join(want, ",") {
		t.Errorf("timeline %q, want %q", labels, want)
	}
	tl := text(t, ctx, "ol.timeline")
	for _, want := range []string{revA + " → " + revB, "digest " + digestA + " → " + digestB} {
		if !strings.Contains(tl, want) {
			t.Errorf("the edit's line does not say %q: %s", want, tl)
		}
	}
	browsertest.Screenshot(t, ctx, "workload")

	// The diff of the edit: the model's revision and the image's digest.
	browsertest.Follow(t, ctx, `ol.timeline a[href*="from="]`)
	d := text(t, ctx, "section:has(#diff)")
	for _, want := range []string{revA, revB, digestA, digestB, "meta-llama/Llama-3.1-8B-Instruct", "docker.io/vllm/vllm-openai"} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff does not show %s:\n%s", want, d)
		}
	}
	for _, field := range []string{"revision", "digest"} {
		if !strings.Contains(d, field) {
			t.Errorf("the diff names no %s field:\n%s", field, d)
		}
	}
	browsertest.Screenshot(t, ctx, "workload-diff")

	// The deleted version shows the tombstone and the BOM before it.
	browsertest.Follow(t, ctx, `ol.timeline li.deleted a`)
	if h := text(t, ctx, "#bom-h"); !strings.Contains(h, "deleted") {
		t.Errorf("the deleted version's BOM heading reads %q", h)
	}
	browsertest.Screenshot(t, ctx, "workload-deleted-version")
}

func findingsPage(t *testing.T, ctx context.Context, base string) {
	browsertest.Do(t, ctx, "open the findings", chromedp.Navigate(base+"/findings"))
	rs := rows(t, ctx, "table.findings")
	if len(rs) == 0 {
		t.Fatal("no finding listed")
	}
	browsertest.Screenshot(t, ctx, "findings")
	// The first finding links to its workload.
	want := rs[0][3] // cluster/namespace/kind/name
	browsertest.Follow(t, ctx, `table.findings tbody tr:first-child td:nth-child(4) a`)
	parts := strings.Split(want, "/")
	if h := text(t, ctx, "h1"); h != parts[2]+" "+parts[3] {
		t.Errorf("the finding of %s led to %q", want, h)
	}
	if f := text(t, ctx, "section:has(#findings)"); !strings.Contains(f, rs[0][2]) {
		t.Errorf("the workload page does not list the finding's rule %s: %s", rs[0][2], f)
	}
	browsertest.Screenshot(t, ctx, "finding-workload")
}

func fleetPage(t *testing.T, ctx context.Context, base string) {
	browsertest.Do(t, ctx, "open the fleet", chromedp.Navigate(base+"/fleet"))
	svgs := browsertest.Get(t, ctx, "charts", chromedp.Nodes(chromedp.CSSAll("svg[role=img]")))
	if len(svgs) != 4 {
		t.Errorf("%d charts, want 4", len(svgs))
	}
	page := text(t, ctx, "main")
	for _, want := range []string{"vllm 0.7.71", genModels[0], "Changes per day"} {
		if !strings.Contains(page, want) {
			t.Errorf("the fleet page does not show %q", want)
		}
	}
	browsertest.Screenshot(t, ctx, "fleet")
	// A bar links to the inventory filtered on it.
	browsertest.Do(t, ctx, "follow a runtime bar", chromedp.Navigate(base+"/?"+url.Values{"runtime": {"vllm==0.7.93"}}.Encode()))
	if n := total(t, ctx); n != generated/4 {
		t.Errorf("vllm==0.7.93: %d, want %d", n, generated/4)
	}
}
