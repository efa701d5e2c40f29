package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/bomstream/bomstream/inventory/web/browsertest"
)

// TestKeyboardAndNarrowWindow: in a phone-wide window no page is wider
// than the window (wide tables scroll inside their own region), the theme
// follows the system's dark setting, and the
// inventory can be filtered with the keyboard alone: Tab reaches the skip
// link first, Enter jumps to the content, Tab to the first filter, Enter
// submits.
func TestKeyboardAndNarrowWindow(t *testing.T) {
	dir := corpus(t)
	base := "http://" + serveWeb(t, dir)
	ctx := browsertest.Start(t, browsertest.Options{Width: 390, Height: 844})
	for _, p := range []struct{ name, path string }{
		{"inventory", "/"},
		{"workload", "/workloads/default/" + demoNS + "/Deployment/" + demoName},
		{"findings", "/findings"},
		{"fleet", "/fleet"},
	} {
		browsertest.Do(t, ctx, "open "+p.name, chromedp.Navigate(base+p.path))
		over := browsertest.Get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		if over > 0 {
			t.Errorf("%s is %d pixels wider than a 390-pixel window", p.name, over)
		}
		browsertest.Screenshot(t, ctx, "narrow-"+p.name)
	}

	// The theme follows the system: dark when it asks for dark.
	background := func() string {
		return browsertest.Get(t, ctx, "background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	}
	light := background()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	if dark := background(); light != "rgb(255, 255, 255)" || dark != "rgb(13, 17, 23)" {
		t.Errorf("backgrounds: light %s, dark %s", light, dark)
	}
	browsertest.Screenshot(t, ctx, "narrow-fleet-dark")
	browsertest.Do(t, ctx, "the workload, dark", chromedp.Navigate(base+"/workloads/default/"+demoNS+"/Deployment/"+demoName))
	browsertest.Screenshot(t, ctx, "narrow-workload-dark")

	active := func() string {
		return browsertest.Get(t, ctx, "focused element", chromedp.Evaluate[string](`(document.activeElement.id || document.activeElement.className || document.activeElement.tagName)`))
	}
	browsertest.Do(t, ctx, "open the inventory", chromedp.Navigate(base+"/"), chromedp.KeyEvent("\t"))
	if a := active(); a != "skip" {
		t.Errorf("the first Tab focuses %q, want the skip link", a)
	}
	browsertest.Do(t, ctx, "skip to content", chromedp.KeyEvent("\r"))
	if a := active(); a != "main" {
		t.Errorf("the skip link leads to %q, want main", a)
	}
	browsertest.Do(t, ctx, "tab to the first filter", chromedp.KeyEvent("\t"))
	if a := active(); a != "f-model" {
		t.Errorf("Tab after the skip focuses %q, want the model filter", a)
	}
	model := genModels[1]
	browsertest.Do(t, ctx, "type a model", chromedp.KeyEvent(model))
	_, err := chromedp.RunResponse(ctx, chromedp.KeyEvent("\r"))
	if err != nil {
		t.Fatal(err)
	}
	loc := browsertest.Get(t, ctx, "location", chromedp.Location())
	if u, _ := url.Parse(loc); u == nil || u.Query().Get("model") != model {
		t.Errorf("Enter in the filter led to %s", loc)
	}
	if c := text(t, ctx, "#count"); !strings.HasSuffix(c, " of 2500") {
		t.Errorf("filtered with the keyboard: %q", c)
	}
}
