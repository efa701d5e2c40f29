package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Locator says where the sinks hold version v of workload w (latest: v is
// the workload's current version). The cmd wires the configured sinks'
// Locate and their ledgers.
type Locator func(ctx context.Context, w schemas.Workload, v inventory.Version, latest bool) ([]Located, error)

// Located is one place a sink holds a BOM, and whether the sink's ledger
// says it wrote it.
type Located struct {
	sinks.Location
	// Applied is what the sink's ledger says: "exported", "not yet" (the
	// sink has not reached this version), "superseded" (a store that keeps
	// the latest only moved on) or "" when unknown.
	Applied string
}

// Store is what the pages read from the streams: BOM bodies (BOMS, by
// sequence), findings (FINDINGS), and FINDINGS followed into a findings
// index when the caller keeps none. A *stream.Bus is one.
type Store interface {
	findings.Store
	follow.Source
}

// Sources are what the pages read.
type Sources struct {
	Index *inventory.Index
	// Store reads BOM bodies (BOMS) and findings (FINDINGS).
	Store Store
	// Findings is the findings index the pages read, kept current by the
	// caller; when nil, Register makes one and follows FINDINGS itself.
	Findings *findings.Index
	// Locate is optional: without it a workload page lists no sink.
	Locate Locator
	// Now is the time relative times count back from; time.Now when nil.
	Now func() time.Time
}

// Pages serves the pages of one Sources.
type Pages struct {
	src  Sources
	tmpl map[string]*template.Template
	srv  *api.Server
	// findingsIx keeps every finding's state, followed from FINDINGS.
	findingsIx *findings.Index

	fleetCache fleetCache
}

// pageNames are the templates, each rendered inside layout.html.
var pageNames = []string{"inventory", "workload", "findings", "fleet", "login", "error"}

// Register adds the pages to srv, behind its authentication, and the
// login form it shows a browser without the token. Without src.Findings
// it reads FINDINGS into a findings index of its own in the background,
// then follows it (a follow.Follower) until ctx ends (onErr, when set,
// hears of a read that failed).
func Register(ctx context.Context, srv *api.Server, src Sources, onErr func(error)) (*Pages, error) {
	if src.Now == nil {
		src.Now = time.Now
	}
	p := &Pages{src: src, tmpl: map[string]*template.Template{}, findingsIx: src.Findings, srv: srv}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		p.tmpl[name] = t
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	srv.Handle("GET /static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		secure(w)
		files.ServeHTTP(w, r)
	}))
	srv.Handle("GET /{$}", http.HandlerFunc(p.inventory))
	srv.Handle("GET /workloads/{cluster}/{ns}/{kind}/{name}", http.HandlerFunc(p.workload))
	srv.Handle("GET /findings", http.HandlerFunc(p.findings))
	srv.Handle("GET /fleet", http.HandlerFunc(p.fleet))
	srv.Login(http.HandlerFunc(p.login))
	if p.findingsIx == nil {
		p.findingsIx = findings.NewIndex()
		go follow.New(src.Store, schemas.StreamFindings, p.findingsIx).Run(ctx, onErr)
	}
	return p, nil
}

// page is what layout.html reads; Data is the page's own.
type page struct {
	Title string
	Nav   string // the section: inventory, findings, fleet
	Data  any
}

// secure sets the headers every page carries: nothing is loaded from
// elsewhere, nothing runs, nothing is framed or referred.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// render writes template name with code; the page is built in memory
// first, so a template error is a 500 and never half a page.
func (p *Pages) render(w http.ResponseWriter, code int, name string, pg page) {
	var buf bytes.Buffer
	if err := p.tmpl[name].Execute(&buf, pg); err != nil {
		http.Error(w, "web: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	secure(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail renders the error page: what was asked, and why it cannot be shown.
func (p *Pages) fail(w http.ResponseWriter, code int, nav string, err error) {
	p.render(w, code, "error", page{Title: http.StatusText(code), Nav: nav, Data: err.Error()})
}

// workloadPath is the page of a workload (namespace "-" when
// cluster-scoped, as in the API).
func workloadPath(cluster, namespace, kind, name string) string {
	if namespace == "" {
		namespace = "-"
	}
	return "/workloads/" + url.PathEscape(cluster) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

// apiBOMPath is the raw CycloneDX of version seq.
func apiBOMPath(cluster, namespace, kind, name string, seq uint64) string {
	return "/api/v1" + workloadPath(cluster, namespace, kind, name) + "/bom?version=" + fmt.Sprint(seq)
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"join": strings.Join,
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
	"wpath": workloadPath,
	// dict passes several values to a template: dict "K1" V1 "K2" V2.
	"dict": func(kv ...any) map[string]any {
		m := make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	"nsOrDash": func(ns string) string {
		if ns == "" {
			return "-"
		}
		return ns
	},
}

// login is the form a browser gets without the token (401), and its
// answer: the right token is kept in an HttpOnly, SameSite=Strict cookie
// and the browser goes back to the page it asked for.
func (p *Pages) login(w http.ResponseWriter, r *http.Request) {
	next := r.URL.RequestURI()
	if r.URL.Path == "/login" {
		next = r.FormValue("next")
	}
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/login") {
		next = "/"
	}
	type form struct{ Next, Problem string }
	if r.Method == http.MethodPost && r.URL.Path == "/login" {
		if !p.srv.CheckToken(r.PostFormValue("token")) {
			p.render(w, http.StatusUnauthorized, "login", page{Title: "Sign in", Data: form{Next: next, Problem: "That is not the server's token."}})
			return
		}
		http.SetCookie(w, &http.Cookie{Name: api.TokenCookie, Value: r.PostFormValue("token"), Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	code := http.StatusUnauthorized // a page asked for without the token
	if r.URL.Path == "/login" {
		code = http.StatusOK
	}
	p.render(w, code, "login", page{Title: "Sign in", Data: form{Next: next}})
}
