package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/api/apitest"
)

// serve serves s on every address and returns its port.
func serve(t *testing.T, s *api.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func get(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOpenServerAnswersLoopbackOnly: a server no token guards (the
// listener's rule keeps it on loopback; this holds it per request too)
// refuses a client beyond loopback.
func TestOpenServerAnswersLoopbackOnly(t *testing.T) {
	s, err := api.New(api.Config{}, inventory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	port := serve(t, s)
	if code, body := get(t, "http://"+apitest.RemoteIP(t)+":"+port+"/api/v1/status", nil); code != http.StatusForbidden || !strings.Contains(body, "loopback") {
		t.Errorf("remote client of an open server: %d %s", code, body)
	}
	if code, body := get(t, "http://127.0.0.1:"+port+"/api/v1/status", nil); code != http.StatusOK {
		t.Errorf("loopback client of an open server: %d %s", code, body)
	}
}

// TestTokenGuardsEveryRoute: without the token a remote client gets 401,
// with it (header, bearer or cookie) the answer; the token is never
// echoed.
func TestTokenGuardsEveryRoute(t *testing.T) {
	const token = "s3cret-token-value"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Listen: "0.0.0.0:0", TokenFile: file}, inventory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /extra", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "extra") }))
	base := "http://" + apitest.RemoteIP(t) + ":" + serve(t, s)
	for _, path := range []string{"/api/v1/status", "/api/v1/workloads", "/extra", "/"} {
		for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"X-Bomstream-Token": "wrong"}, {"Cookie": api.TokenCookie + "=wrong"}, {"Accept": "text/html"}} {
			code, body := get(t, base+path, h)
			if code != http.StatusUnauthorized || strings.Contains(body, token) {
				t.Errorf("GET %s with %v: %d %s", path, h, code, body)
			}
		}
	}
	for _, h := range []map[string]string{{"Authorization": "Bearer " + token}, {"X-Bomstream-Token": token}, {"Cookie": api.TokenCookie + "=" + token}} {
		if code, body := get(t, base+"/extra", h); code != http.StatusOK || body != "extra" {
			t.Errorf("GET /extra with %v: %d %s", h, code, body)
		}
	}
}

// TestLoginServesBrowsers: with a login handler, a page request without
// the token gets the handler (the form), /login is reachable without a
// token, and the API still answers JSON.
func TestLoginServesBrowsers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Listen: "0.0.0.0:0", TokenFile: file}, inventory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Login(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/login" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		_, _ = io.WriteString(w, "login form for "+r.URL.Path)
	}))
	base := "http://" + apitest.RemoteIP(t) + ":" + serve(t, s)
	if code, body := get(t, base+"/fleet", map[string]string{"Accept": "text/html"}); code != http.StatusUnauthorized || body != "login form for /fleet" {
		t.Errorf("page without token: %d %s", code, body)
	}
	if code, body := get(t, base+"/login", nil); code != http.StatusOK || body != "login form for /login" {
		t.Errorf("/login: %d %s", code, body)
	}
	if code, body := get(t, base+"/api/v1/status", map[string]string{"Accept": "text/html"}); code != http.StatusUnauthorized || !strings.Contains(body, `"error"`) {
		t.Errorf("API without token, from a browser: %d %s", code, body)
	}
}
