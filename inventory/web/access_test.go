package web_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bomstream/bomstream/inventory/api/apitest"
	"github.com/bomstream/bomstream/inventory/web/browsertest"
)

// TestRemoteClientNeedsTheToken: `web` listening beyond loopback with a
// token refuses every page and API route to a remote client without it,
// and shows nothing of the inventory; a browser signs in once at /login
// and reads the pages.
func TestRemoteClientNeedsTheToken(t *testing.T) {
	dir := corpus(t)
	const token = "web-test-token-4f1c9a"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveWeb(t, dir, "--api-listen", "0.0.0.0:0", "--api-token-file", tokenFile)
	_, port, _ := net.SplitHostPort(addr)
	base := "http://" + apitest.RemoteIP(t) + ":" + port
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(req *http.Request) (int, string, *http.Response) {
		t.Helper()
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}
	paths := []string{"/", "/fleet", "/findings", "/workloads/default/" + demoNS + "/Deployment/" + demoName, "/static/style.css",
		"/api/v1/workloads", "/api/v1/status", "/api/v1/findings", "/api/v1/workloads/default/" + demoNS + "/Deployment/" + demoName + "/bom"}
	for _, p := range paths {
		for _, accept := range []string{"", "text/html"} {
			req, _ := http.NewRequest(http.MethodGet, base+p, nil)
			req.Header.Set("Accept", accept)
			code, body, _ := do(req)
			if code != http.StatusUnauthorized {
				t.Errorf("GET %s (Accept %q) without the token: %d", p, accept, code)
			}
			for _, leak := range []string{demoName, "gen-00001", genModels[0], token} {
				if strings.Contains(body, leak) && !strings.Contains(p, leak) { // the form names the page asked for
					t.Errorf("GET %s without the token shows %q", p, leak)
				}
			}
		}
		req, _ := http.NewRequest(http.MethodGet, base+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if code, body, _ := do(req); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d %s", p, code, body)
		}
	}
	// A wrong token at /login gets the form again, and no cookie.
	code, body, resp := do(postForm(base+"/login", url.Values{"token": {"wrong"}, "next": {"/fleet"}}))
	if code != http.StatusUnauthorized || !strings.Contains(body, "not the server&#39;s token") || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %d, cookies %v", code, resp.Cookies())
	}
	// The next page is a path on this server, never another site.
	_, _, resp = do(postForm(base+"/login", url.Values{"token": {token}, "next": {"//evil.example/"}}))
	if loc := resp.Header.Get("Location"); loc != "/" {
		t.Errorf("login with next=//evil.example/ redirects to %q", loc)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the login's cookie: %+v", cookie)
	}

	// In a browser: the page asked for shows the form; signing in leads
	// back to it.
	ctx := browsertest.Start(t, browsertest.Options{})
	browsertest.Do(t, ctx, "open the fleet page", chromedp.Navigate(base+"/fleet"))
	if h := text(t, ctx, "h1"); h != "Sign in" {
		t.Fatalf("without the token the page shows %q", h)
	}
	browsertest.Screenshot(t, ctx, "sign-in")
	browsertest.Do(t, ctx, "type the token", chromedp.SendKeys(chromedp.ID("token"), token))
	browsertest.Follow(t, ctx, `form.login button`)
	if h := text(t, ctx, "h1"); h != "Fleet" {
		t.Errorf("after signing in the browser shows %q", h)
	}
	if loc := browsertest.Get(t, ctx, "location", chromedp.Location()); !strings.HasSuffix(loc, "/fleet") {
		t.Errorf("after signing in the browser is at %s", loc)
	}
}

func postForm(u string, v url.Values) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}
