package api

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/schemas"
)

// Bodies reads a stored message back: a stream.Reader.
type Bodies interface {
	GetMsg(ctx context.Context, streamName string, seq uint64) (*jetstream.RawStreamMsg, error)
}

// Server answers the API from an index. Routes and extensions are added
// before Handler is called.
type Server struct {
	ix     *inventory.Index
	bodies Bodies
	token  string
	// open: neither a token nor client certificates guard the server, so
	// it answers loopback clients only.
	open  bool
	mux   *http.ServeMux
	ext   map[string]inventory.Extension
	login http.Handler
	// findings answers findings=true (FilterFindings); nil: refused.
	findings Findings
	// Now is the time durations count back from (at=72h).
	Now func() time.Time
}

// DefaultLimit and MaxLimit bound a page of /api/v1/workloads.
const (
	DefaultLimit = 100
	MaxLimit     = 5000
)

// New builds the server of cfg over ix; bodies serves /bom.
func New(cfg Config, ix *inventory.Index, bodies Bodies) (*Server, error) {
	token, err := cfg.token()
	if err != nil {
		return nil, err
	}
	s := &Server{ix: ix, bodies: bodies, token: token, open: token == "" && cfg.ClientCA == "",
		mux: http.NewServeMux(), ext: map[string]inventory.Extension{}, Now: time.Now}
	s.mux.HandleFunc("GET /api/v1/workloads", s.workloads)
	s.mux.HandleFunc("GET /api/v1/workloads/{cluster}/{ns}/{kind}/{name}", s.workload)
	s.mux.HandleFunc("GET /api/v1/workloads/{cluster}/{ns}/{kind}/{name}/bom", s.bom)
	s.mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, ix.Stats()) })
	return s, nil
}

// Handle adds a route (a ServeMux pattern such as "GET
// /api/v1/findings"), behind the same authentication.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Extend adds a query field to /api/v1/workloads.
func (s *Server) Extend(field string, x inventory.Extension) { s.ext[field] = x }

// Login sets the handler of the paths "/login" (served without a token,
// so that a browser can send one) and of a page request (one that accepts
// text/html, outside /api/) that came without the token: the web pages
// give a form there that stores the token in a cookie (TokenCookie).
func (s *Server) Login(h http.Handler) { s.login = h }

// TokenCookie is the cookie a browser may carry the token in.
const TokenCookie = "bomstream_token"

// Handler is the API with its authentication: a request without the token
// gets 401; on a server that no token and no client-certificate authority
// guards, a request from beyond loopback gets 403 (the listener's own rule,
// Config.Validate, held again per request).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.open && !fromLoopback(r) {
			writeError(w, http.StatusForbidden, errors.New("this server has no token: it answers loopback clients only"))
			return
		}
		if s.login != nil && r.URL.Path == "/login" {
			s.login.ServeHTTP(w, r)
			return
		}
		if s.token != "" && !s.Authorized(r) {
			if s.login != nil && !strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.Header.Get("Accept"), "text/html") {
				s.login.ServeHTTP(w, r) // answers 401 with its form
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="bomstream"`)
			writeError(w, http.StatusUnauthorized, errors.New("a bearer token is required"))
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Authorized reports whether r carries the token: "Authorization: Bearer
// TOKEN", the header X-Bomstream-Token, or the cookie TokenCookie. It is
// true on a server without a token.
func (s *Server) Authorized(r *http.Request) bool {
	if s.token == "" {
		return true
	}
	got := r.Header.Get("X-Bomstream-Token")
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		got = t
	} else if c, err := r.Cookie(TokenCookie); got == "" && err == nil {
		got = c.Value
	}
	return s.CheckToken(got)
}

// CheckToken reports whether got is the server's token, in constant time.
func (s *Server) CheckToken(got string) bool {
	return s.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the API on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("api: %w", err)
	}
	return nil
}

// Page is the answer of /api/v1/workloads.
type Page struct {
	Items []inventory.Entry `json:"items"`
	Total int               `json:"total"`
	// Continue, when set, asks for the next page (continue=...).
	Continue string `json:"continue,omitempty"`
}

func (s *Server) workloads(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	limit, after := DefaultLimit, params.Get("continue")
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			writeError(w, http.StatusBadRequest, fmt.Errorf("query: limit %q: not a number from 1 to %d", v, MaxLimit))
			return
		}
		limit = n
	}
	delete(params, "limit")
	delete(params, "continue")
	q, withFindings, err := ParseQuery(params, s.Now(), s.ext)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if withFindings {
		if code, err := s.filterFindings(&q); err != nil {
			writeError(w, code, err)
			return
		}
	}
	all := s.ix.Find(q)
	start := 0
	if after != "" {
		raw, err := base64.RawURLEncoding.DecodeString(after)
		key, uid, ok := strings.Cut(string(raw), "\n")
		if err != nil || !ok {
			writeError(w, http.StatusBadRequest, fmt.Errorf("query: continue %q: not a token this API gave", after))
			return
		}
		for start < len(all) && (all[start].Key() < key || all[start].Key() == key && all[start].UID <= uid) {
			start++
		}
	}
	page := Page{Items: all[start:min(start+limit, len(all))], Total: len(all)}
	if start+limit < len(all) {
		last := page.Items[len(page.Items)-1]
		page.Continue = base64.RawURLEncoding.EncodeToString([]byte(last.Key() + "\n" + last.UID))
	}
	if page.Items == nil {
		page.Items = []inventory.Entry{}
	}
	if withFindings {
		if err := s.annotate(r.Context(), page.Items); err != nil {
			writeError(w, http.StatusBadGateway, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// Detail is the answer of /api/v1/workloads/{cluster}/{ns}/{kind}/{name}.
type Detail struct {
	Workload inventory.Entry     `json:"workload"`
	Versions []inventory.Version `json:"versions"`
}

// lookup finds the workload of the path, and the time asked about.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (inventory.Workload, time.Time, bool) {
	ns := r.PathValue("ns")
	if ns == "-" {
		ns = ""
	}
	var at time.Time
	if v := r.URL.Query().Get("at"); v != "" {
		t, err := inventory.ParseTime(v, s.Now())
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("query: at %q: %w", v, err))
			return inventory.Workload{}, at, false
		}
		at = t
	}
	key := r.PathValue("cluster") + "/" + ns + "/" + r.PathValue("kind") + "/" + r.PathValue("name")
	wl, ok := s.ix.Workload(r.PathValue("cluster"), ns, r.PathValue("kind"), r.PathValue("name"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("workload %s not found", key))
		return wl, at, false
	}
	return wl, at, true
}

func (s *Server) workload(w http.ResponseWriter, r *http.Request) {
	wl, at, ok := s.lookup(w, r)
	if !ok {
		return
	}
	e, ok := wl.EntryAt(at)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("workload %s/%s/%s/%s: no version at %s", wl.ID.Cluster, wl.ID.Namespace, wl.ID.Kind, wl.ID.Name, at.Format(time.RFC3339Nano)))
		return
	}
	writeJSON(w, http.StatusOK, Detail{Workload: e, Versions: wl.Versions})
}

func (s *Server) bom(w http.ResponseWriter, r *http.Request) {
	wl, at, ok := s.lookup(w, r)
	if !ok {
		return
	}
	name := wl.ID.Namespace + "/" + wl.ID.Kind + "/" + wl.ID.Name
	v, ok := wl.VersionAt(at)
	if q := r.URL.Query().Get("version"); q != "" {
		n, err := strconv.ParseUint(q, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("query: version %q: not a change sequence", q))
			return
		}
		if v, ok = wl.Version(n); !ok {
			writeError(w, http.StatusNotFound, fmt.Errorf("%s: no version %d", name, n))
			return
		}
	}
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Errorf("%s: no BOM at %s", name, at.Format(time.RFC3339Nano)))
		return
	case v.Tombstone != "":
		writeError(w, http.StatusNotFound, fmt.Errorf("%s: %s since %s", name, v.Tombstone, v.Time.Format(time.RFC3339Nano)))
		return
	}
	bom, err := ReadBOM(r.Context(), s.bodies, v)
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Errorf("bom of %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "application/vnd.cyclonedx+json")
	_, _ = w.Write(bom)
}

// ReadBOM reads the CycloneDX body of version v (a BOM, not a tombstone)
// from BOMS, through the stream's codec.
func ReadBOM(ctx context.Context, bodies Bodies, v inventory.Version) ([]byte, error) {
	m, err := bodies.GetMsg(ctx, schemas.StreamBOMs, v.StreamSeq)
	if err == nil && m == nil {
		err = errors.New("the message is no longer stored")
	}
	var bm schemas.BOMMessage
	if err == nil {
		bm, err = schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
	}
	if err != nil {
		return nil, fmt.Errorf("BOMS seq %d: %w", v.StreamSeq, err)
	}
	return bm.BOM, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
