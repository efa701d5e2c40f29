// Package browsertest drives a headless Chromium from tests, through the
// DevTools protocol (chromedp): the web pages are tested in a real
// browser, not against their HTML text alone.
//
// The browser is Debian's chromium package (installed by .ci/run), or the
// binary BOMSTREAM_CHROMIUM names. Without one a test skips, except under
// CI=true, where it fails: a browser test that cannot run is not a pass.
// Screenshots go to BOMSTREAM_ARTIFACTS/web (or a directory under the
// system's temporary one), named by test, and are logged.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Path finds the browser: BOMSTREAM_CHROMIUM, else chromium,
// chromium-browser or google-chrome on the PATH.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BOMSTREAM_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("BOMSTREAM_CHROMIUM: %v", err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: .ci/run installs Debian's chromium package; set BOMSTREAM_CHROMIUM to another build")
	}
	t.Skip("no chromium on the PATH (apt-get install chromium, or set BOMSTREAM_CHROMIUM)")
	return ""
}

// Options of a browser.
type Options struct {
	// NoScript turns JavaScript off in every page, as a user may.
	NoScript bool
	// Width and Height are the window's, in CSS pixels (1280x900 when 0).
	Width, Height int64
}

// Start launches a headless browser for the test and returns the context
// its actions run in; it is closed when the test ends.
func Start(t testing.TB, o Options) context.Context {
	t.Helper()
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)),
		chromedp.NoSandbox, // tests may run as root in a container
		chromedp.DisableGPU,
		chromedp.WindowSize(int(o.Width), int(o.Height)),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser, which lives as long as the
	// context it ran in: ctx itself, not one with a deadline.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(o.Width, o.Height)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if o.NoScript {
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		if _, err := chromedp.Call(sctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("turn JavaScript off: %v", err)
		}
	}
	return ctx
}

// Do runs actions with a deadline, failing the test with what it was
// doing when one fails.
func Do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Get runs one action that returns a value, as Do does.
func Get[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// ArtifactsDir is where screenshots go: BOMSTREAM_ARTIFACTS/web, or
// bomstream-artifacts/web under the temporary directory.
func ArtifactsDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv("BOMSTREAM_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "bomstream-artifacts")
	}
	dir := filepath.Join(root, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot saves the whole page as TEST--NAME.png in ArtifactsDir.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png := Get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	file := filepath.Join(ArtifactsDir(t), unsafeName.ReplaceAllString(t.Name()+"--"+name, "_")+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", file)
	return file
}

// Follow clicks the element the CSS selector sel selects and waits for
// the page it leads to; a page that answers 400 or more fails the test.
func Follow(t testing.TB, ctx context.Context, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("follow %s: %v", sel, err)
	}
	if resp != nil && resp.Status >= 400 {
		t.Fatalf("follow %s: %s answered %d", sel, resp.URL, resp.Status)
	}
}
