package dtracktest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
)

// Permission names, as Dependency-Track spells them.
const (
	BOMUpload             = "BOM_UPLOAD"
	ProjectCreationUpload = "PROJECT_CREATION_UPLOAD"
	PortfolioManagement   = "PORTFOLIO_MANAGEMENT"
	ViewPortfolio         = "VIEW_PORTFOLIO"
)

// PutLimit is the longest `bom` string PUT /api/v1/bom maps (Jackson's
// maximum string length); longer ones get a 400 that points to multipart.
const PutLimit = 20_000_000

// DefaultVersion is the server version reported unless Options.Version says
// otherwise.
const DefaultVersion = "4.13.6"

// Options configure a Server. The zero value is a 4.13.6 server with schema
// validation on and immediate processing.
type Options struct {
	// Version reported by /api/version; it also selects version-dependent
	// behaviour (see the package comment and lines.go): a full version, or
	// a line ("4.12", "4.13", "4.14", "5.0", "5.1") for the version of
	// Lines that starts with it. Default DefaultVersion.
	Version string
	// Validator checks uploaded CycloneDX 1.6 BOMs. Nil builds one from
	// schemas.CycloneDXSchemaDir (about 0.1 s); tests starting many servers
	// may share one.
	Validator *validate.Validator
	// Validator17 checks uploaded CycloneDX 1.7 BOMs on the lines that take
	// them (4.14.4, 5.1). Nil builds one with validate.CycloneDX17 when such
	// a BOM first comes.
	Validator17 *validate.Validator
	// DisableValidation is the server property bom.validation.mode=DISABLED.
	DisableValidation bool
	// ProcessingDelay is how long an upload waits in the queue before it is
	// imported; AnalysisDelay how long its token stays processing after the
	// import (vulnerability analysis runs under the same token).
	ProcessingDelay time.Duration
	AnalysisDelay   time.Duration
}

// Server is a running Dependency-Track double. Its methods are safe for
// concurrent use.
type Server struct {
	opts      Options
	version   semver
	feat      features
	validator *validate.Validator
	v17       func() (*validate.Validator, error)
	srv       *httptest.Server

	mu        sync.Mutex
	team      string
	keys      map[string]map[string]bool // key -> permission set
	projects  map[string]*project        // by uuid
	byNameIdx map[string]*project        // by nameKey(name, version)
	tokens    map[string]bool            // token -> processing
	queues    map[string][]job           // project uuid -> uploads waiting
	working   map[string]bool            // project uuid -> a worker runs
	down      bool
	downUntil time.Time
	rejects   map[int]RejectFunc
	nextRule  int
	byHash    map[string]int // RejectBOM's rule per bomHash
	calls     map[string]int
	lookups   map[string]int   // nameKey(name, version) -> GET /api/v1/project/lookup
	bytesIn   map[string]int64 // route pattern -> request body bytes read
	processed map[string]int   // bomHash -> successful imports
	uploads   map[string]int   // bomHash -> accepted uploads
	failed    map[string]int   // bomHash -> failed processings
	lastMs    int64
	nextSeq   int64
	closing   chan struct{}
	workers   sync.WaitGroup
}

// RejectFunc decides about the raw bytes of one uploaded BOM: a non-empty
// result rejects the upload as a schema validation failure with those
// errors.
type RejectFunc func(bom []byte) []string

// New starts a server and stops it when the test ends. It fails the test if
// the CycloneDX schema cannot be loaded.
func New(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := Start(opts)
	if err != nil {
		tb.Fatalf("dtracktest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (benchmarks, examples); Close stops it.
func Start(opts Options) (*Server, error) {
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	for _, l := range Lines() {
		if strings.HasPrefix(l, opts.Version+".") {
			opts.Version = l
		}
	}
	v, err := parseSemver(opts.Version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", opts.Version, err)
	}
	val := opts.Validator
	if val == nil && !opts.DisableValidation {
		if val, err = validate.CycloneDX(); err != nil {
			return nil, err
		}
	}
	v17 := func() (*validate.Validator, error) { return validate.CycloneDX17() }
	if opts.Validator17 != nil {
		v17 = func() (*validate.Validator, error) { return opts.Validator17, nil }
	}
	s := &Server{
		opts: opts, version: v, feat: featuresOf(v), validator: val, v17: v17, team: "bomstream",
		keys: map[string]map[string]bool{}, projects: map[string]*project{}, byNameIdx: map[string]*project{},
		tokens: map[string]bool{}, queues: map[string][]job{}, working: map[string]bool{},
		rejects: map[int]RejectFunc{}, byHash: map[string]int{}, calls: map[string]int{}, lookups: map[string]int{}, bytesIn: map[string]int64{},
		processed: map[string]int{}, uploads: map[string]int{}, failed: map[string]int{}, closing: make(chan struct{}),
	}
	mux := http.NewServeMux()
	for pattern, h := range map[string]http.HandlerFunc{
		"GET /api/version":                    s.getVersion,
		"PUT /api/v1/bom":                     s.putBOM,
		"POST /api/v1/bom":                    s.postBOM,
		"GET /api/v1/bom/token/{uuid}":        s.getBOMToken,
		"GET /api/v1/event/token/{uuid}":      s.getEventToken,
		"GET /api/v1/project":                 s.getProjects,
		"GET /api/v1/project/lookup":          s.lookupProject,
		"GET /api/v1/project/{uuid}":          s.getProject,
		"GET /api/v1/project/{uuid}/children": s.getChildren,
		"PUT /api/v1/project":                 s.createProject,
		"POST /api/v1/project":                s.updateProject,
		"PATCH /api/v1/project/{uuid}":        s.patchProject,
		"DELETE /api/v1/project/{uuid}":       s.deleteProject,
		"GET /api/v1/team/self":               s.getTeamSelf,
	} {
		mux.HandleFunc(pattern, s.route(pattern, h))
	}
	s.srv = httptest.NewServer(mux)
	return s, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server and its processing.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		return
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.workers.Wait()
}

// route counts the request and answers 503 during an outage.
func (s *Server) route(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls[pattern]++
		down := s.down || time.Now().Before(s.downUntil)
		s.mu.Unlock()
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.Body = &countingBody{ReadCloser: r.Body, s: s, pattern: pattern}
		h(w, r)
	}
}

// NewKey creates an API key (in the 4.13 format odt_<id>_<secret>) of a team
// holding perms, and returns it.
func (s *Server) NewKey(perms ...string) string {
	key := "odt_" + randomHex(4) + "_" + randomHex(16)
	s.SetPermissions(key, perms...)
	return key
}

// SetPermissions makes key valid with exactly perms (creating it if needed).
func (s *Server) SetPermissions(key string, perms ...string) {
	set := map[string]bool{}
	for _, p := range perms {
		set[p] = true
	}
	s.mu.Lock()
	s.keys[key] = set
	s.mu.Unlock()
}

// RevokeKey makes key invalid: requests with it get 401.
func (s *Server) RevokeKey(key string) {
	s.mu.Lock()
	delete(s.keys, key)
	s.mu.Unlock()
}

// Down makes every route answer 503 with an empty body, for d, or until Up
// when d <= 0. Processing already queued goes on.
func (s *Server) Down(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		s.down = true
		return
	}
	s.downUntil = time.Now().Add(d)
}

// Up ends an outage.
func (s *Server) Up() {
	s.mu.Lock()
	s.down, s.downUntil = false, time.Time{}
	s.mu.Unlock()
}

// Reject makes uploads fail schema validation with the errors f returns;
// the returned function removes the rule.
func (s *Server) Reject(f RejectFunc) (remove func()) {
	s.mu.Lock()
	id := s.nextRule
	s.nextRule++
	s.rejects[id] = f
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.rejects, id)
		s.mu.Unlock()
	}
}

// RejectBOM makes uploads of the BOM whose bytes hash to bomHash
// ("sha256:<hex>") fail schema validation with errs (a default error when
// none is given), until AcceptBOM.
func (s *Server) RejectBOM(bomHash string, errs ...string) {
	if len(errs) == 0 {
		errs = []string{"$: rejected by the test"}
	}
	s.AcceptBOM(bomHash)
	s.mu.Lock()
	id := s.nextRule
	s.nextRule++
	s.rejects[id] = func(b []byte) []string {
		if schemas.BomHash(b) == bomHash {
			return errs
		}
		return nil
	}
	s.byHash[bomHash] = id
	s.mu.Unlock()
}

// AcceptBOM removes RejectBOM's rule for bomHash.
func (s *Server) AcceptBOM(bomHash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byHash[bomHash]; ok {
		delete(s.rejects, id)
		delete(s.byHash, bomHash)
	}
}

// Calls is the number of requests a route received, by its pattern:
// "PUT /api/v1/bom", "POST /api/v1/bom", "GET /api/v1/project/lookup",
// "PATCH /api/v1/project/{uuid}", ... (see the package comment). Requests
// answered 503 during an outage count.
func (s *Server) Calls(pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[pattern]
}

// AllCalls returns a copy of the counts of every route.
func (s *Server) AllCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	maps.Copy(out, s.calls)
	return out
}

// Processed is the number of successful imports of the BOM whose bytes hash
// to bomHash.
func (s *Server) Processed(bomHash string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.processed[bomHash]
}

// ProcessedAll returns a copy of the successful imports per bomHash.
func (s *Server) ProcessedAll() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.processed))
	maps.Copy(out, s.processed)
	return out
}

// Uploads is the number of uploads of the BOM whose bytes hash to bomHash
// that the server accepted (answered with a token), whether or not their
// processing succeeded.
func (s *Server) Uploads(bomHash string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploads[bomHash]
}

// UploadsAll returns a copy of the accepted uploads per bomHash.
func (s *Server) UploadsAll() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.uploads))
	maps.Copy(out, s.uploads)
	return out
}

// FailedProcessing is the number of times processing of the BOM hashing to
// bomHash failed after it was accepted (BOM_PROCESSING_FAILED).
func (s *Server) FailedProcessing(bomHash string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed[bomHash]
}

// Idle reports whether no upload is queued or being processed.
func (s *Server) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.tokens {
		if p {
			return false
		}
	}
	return true
}

// authorize authenticates the request's X-Api-Key and checks that the key
// holds one of perms (none when empty). It writes 401 or 403 with an empty
// body and returns nil when the request may not go on.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, perms ...string) map[string]bool {
	key := r.Header.Get("X-Api-Key")
	s.mu.Lock()
	held, ok := s.keys[key]
	s.mu.Unlock()
	if key == "" || !ok {
		w.WriteHeader(http.StatusUnauthorized)
		return nil
	}
	if len(perms) > 0 && !anyOf(held, perms...) {
		w.WriteHeader(http.StatusForbidden)
		return nil
	}
	return held
}

func (s *Server) getVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"version": s.opts.Version, "application": "Dependency-Track", "timestamp": "2025-01-01T00:00:00Z",
		"uuid": "3a0f1b4e-9c38-4a3e-8a77-000000000001", "systemUuid": "3a0f1b4e-9c38-4a3e-8a77-000000000002",
		"framework": map[string]any{"name": "Alpine", "version": "3.1.2", "timestamp": "2025-01-01T00:00:00Z",
			"uuid": "3a0f1b4e-9c38-4a3e-8a77-000000000003"},
	})
}

func (s *Server) getTeamSelf(w http.ResponseWriter, r *http.Request) {
	perms := s.authorize(w, r)
	if perms == nil {
		return
	}
	names := make([]string, 0, len(perms))
	for p := range perms {
		names = append(names, p)
	}
	sort.Strings(names)
	list := make([]map[string]string, 0, len(names))
	for _, n := range names {
		list = append(list, map[string]string{"name": n, "description": "Allows " + strings.ToLower(strings.ReplaceAll(n, "_", " "))})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"uuid": "3a0f1b4e-9c38-4a3e-8a77-0000000000aa", "name": s.team, "permissions": list,
	})
}

func (s *Server) getEventToken(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r) == nil {
		return
	}
	s.token(w, r)
}

func (s *Server) getBOMToken(w http.ResponseWriter, r *http.Request) {
	if s.authorize(w, r, BOMUpload) == nil {
		return
	}
	s.token(w, r)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("uuid")
	if !isUUID(id) {
		writeViolations(w, violation{Message: "Invalid UUID", Template: "Invalid UUID", Path: "isTokenBeingProcessed.arg0", Value: &id})
		return
	}
	s.mu.Lock()
	processing := s.tokens[id]
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]bool{"processing": processing})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeText writes a raw string entity the way Jersey does for resources
// that produce application/json: unquoted, still labelled JSON.
func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}

// problem is an RFC 9457 problem document as the API server writes it.
type problem struct {
	Status int      `json:"status"`
	Title  string   `json:"title"`
	Detail string   `json:"detail"`
	Errors []string `json:"errors,omitempty"`
}

func writeProblem(w http.ResponseWriter, p problem) {
	b, _ := json.Marshal(p)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

// writeMappingProblem is the 400 of JsonMappingExceptionMapper.
func writeMappingProblem(w http.ResponseWriter, detail string) {
	writeProblem(w, problem{Status: http.StatusBadRequest, Title: "The provided JSON payload could not be mapped", Detail: detail})
}

// violation is one element of a bean-validation 400 (Alpine's
// failOnValidationError).
type violation struct {
	Message  string  `json:"message"`
	Template string  `json:"messageTemplate"`
	Path     string  `json:"path"`
	Value    *string `json:"invalidValue"`
}

func writeViolations(w http.ResponseWriter, vs ...violation) {
	writeJSON(w, http.StatusBadRequest, vs)
}

func notBlank(path string, v *string) []violation {
	if v == nil || strings.TrimSpace(*v) == "" {
		return []violation{{Message: "must not be blank", Template: "{jakarta.validation.constraints.NotBlank.message}", Path: path, Value: v}}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newUUIDv7 returns a time-ordered (version 7) UUID, as 5.x tokens are.
func newUUIDv7() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newUUID returns a random (version 4) UUID in lower case.
func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// isUUID matches the API server's UUID pattern: 36 lower-case characters.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// semver is a major.minor.patch version.
type semver [3]int

func parseSemver(v string) (semver, error) {
	v = strings.TrimSuffix(v, "-SNAPSHOT")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 {
		return semver{}, fmt.Errorf("want major.minor.patch")
	}
	var out semver
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return semver{}, fmt.Errorf("want major.minor.patch")
		}
		out[i] = n
	}
	return out, nil
}

func (v semver) atLeast(major, minor, patch int) bool {
	o := semver{major, minor, patch}
	for i := range v {
		if v[i] != o[i] {
			return v[i] > o[i]
		}
	}
	return true
}
