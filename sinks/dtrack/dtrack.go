package dtrack

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"text/template"

	dtrack "github.com/DependencyTrack/client-go"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
)

// Type is the registry name of this sink.
const Type = "dependencytrack"

// MinVersion is the oldest Dependency-Track API server the sink works with:
// projectTags and isLatest in uploads and PATCH bodies came with 4.12.0.
const MinVersion = "4.12.0"

// PutLimit is the longest base64 `bom` PUT /api/v1/bom takes; a BOM whose
// encoding is longer goes as multipart POST.
const PutLimit = 20_000_000

const userAgent = "bomstream"

// SinkType is the registry entry of the Dependency-Track sink. It keeps only
// the latest state of a workload, so the runner skips superseded versions by
// default.
var SinkType = sinks.Type{
	NewConfig: func() sinks.Config { return &Config{} },
	New: func(_ context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
		return New(*cfg.(*Config), deps)
	},
	LatestOnly: true,
}

// Sink exports BOMs to Dependency-Track. It implements sinks.Sink,
// sinks.Checker and sinks.Locator, and is safe for concurrent use.
type Sink struct {
	name string
	cfg  Config
	spec string // the CycloneDX version of the bodies this sink gets (sinks.Deps.SpecVersion)
	hc   *http.Client
	log  *zap.Logger
	m    *metrics
	tpl  struct{ name, version, cluster, namespace *template.Template }
	// byName: a project is named by the workload's name, not its uid, so
	// the runner's order flags (sinks.BOM.Superseded, sinks.Tombstone.Stale),
	// which are about names, are about the project.
	byName bool

	connMu sync.Mutex
	c      *dtrack.Client
	server server // what the API server is, read when c was built

	mu       sync.Mutex
	parents  map[string]uuid.UUID    // parent project (name, version) -> UUID
	parentMu map[string]*sync.Mutex  // one creation at a time per parent
	state    map[string]projectState // workload project (name, version) -> last export
	locks    [64]sync.Mutex          // striped by workload project
}

// projectState is what this process last did to a workload's project: what
// Dependency-Track's asynchronous import needs for idempotence. It lets a
// retry resume the wait for an upload instead of uploading again, and makes
// re-exporting an imported BOM a no-op. Order is the runner's.
type projectState struct {
	bomHash  string
	token    string // set while the upload's import is unconfirmed
	before   int    // lastBomImport before that upload
	imported int    // lastBomImport of the confirmed import
}

// New validates cfg, reads the API key and returns a sink. It does not
// contact Dependency-Track: the first Export does, and Check.
func New(cfg Config, deps sinks.Deps) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	key, err := sinks.ReadSecret("apiKeyFile", cfg.APIKeyFile, "apiKeyEnv", cfg.APIKeyEnv, deps.Getenv)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(key, "\r\n") {
		return nil, errors.New("api key: contains a line break")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile %s: no PEM certificate in it", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	s := &Sink{
		name: deps.Name, cfg: cfg, spec: deps.SpecVersion, log: deps.Log, byName: !strings.Contains(cfg.ProjectName+cfg.ProjectVersion, ".UID"),
		hc:      &http.Client{Timeout: cfg.RequestTimeout, Transport: apiKey{key: key, next: tr}},
		parents: map[string]uuid.UUID{}, parentMu: map[string]*sync.Mutex{}, state: map[string]projectState{},
	}
	if s.name == "" {
		s.name = Type
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	for _, t := range []struct {
		dst  **template.Template
		key  string
		text string
	}{
		{&s.tpl.name, "projectName", cfg.ProjectName}, {&s.tpl.version, "projectVersion", cfg.ProjectVersion},
		{&s.tpl.cluster, "clusterProject", cfg.ClusterProject}, {&s.tpl.namespace, "namespaceProject", cfg.NamespaceProject},
	} {
		if *t.dst, err = parseTemplate(t.key, t.text); err != nil {
			return nil, fmt.Errorf("%s: %w", t.key, err)
		}
	}
	if s.m, err = newMetrics(deps.Metrics, s.name); err != nil {
		return nil, err
	}
	return s, nil
}

// apiKey adds the X-Api-Key header to every request. It has no String
// method that could print the key, and the key never reaches an error.
type apiKey struct {
	key  string
	next http.RoundTripper
}

func (a apiKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Api-Key", a.key)
	return a.next.RoundTrip(r)
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Close implements sinks.Sink.
func (s *Sink) Close() error {
	s.hc.CloseIdleConnections()
	return nil
}

// client returns the Dependency-Track client, connecting on first use:
// client-go reads /api/version when it is built, so a server that is down
// makes the call fail (transiently) rather than New.
func (s *Sink) client(ctx context.Context) (*dtrack.Client, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.c != nil {
		return s.c, nil
	}
	v, err := s.serverVersion(ctx)
	if err != nil {
		return nil, err
	}
	srv := serverOf(v)
	if err := s.usable(srv); err != nil {
		return nil, sinks.Permanent(err)
	}
	c, err := dtrack.NewClient(strings.TrimSuffix(s.cfg.URL, "/"), dtrack.WithHttpClient(s.hc), dtrack.WithUserAgent(userAgent))
	if err != nil {
		return nil, classify(err, "connect to Dependency-Track at "+s.cfg.URL, "")
	}
	s.c, s.server = c, srv
	s.log.Info("connected to Dependency-Track", zap.String("version", v), zap.Strings("features", srv.features(s.cfg, s.spec)))
	return c, nil
}

// srv is what client read about the API server; call it after client.
func (s *Sink) srv() server {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.server
}

// serverVersion reads GET /api/version.
func (s *Sink) serverVersion(ctx context.Context) (string, error) {
	var about struct {
		Version string `json:"version"`
	}
	if err := s.getJSON(ctx, "/api/version", &about); err != nil {
		return "", classify(err, "reach Dependency-Track at "+s.cfg.URL, "")
	}
	if about.Version == "" {
		return "", fmt.Errorf("reach Dependency-Track at %s: /api/version names no version: is url the API server?", s.cfg.URL)
	}
	return about.Version, nil
}

// getJSON GETs path and decodes the answer; a non-2xx answer is a
// *dtrack.APIError, as client-go returns them.
func (s *Sink) getJSON(ctx context.Context, path string, out any) error {
	_, err := s.call(ctx, http.MethodGet, path, nil, out)
	return err
}

// call sends one request the client has no method for (or whose body it
// cannot shape: collectionLogic, isActive) with in as its JSON body (none
// when nil) and decodes a 2xx answer into out (when not nil). A non-2xx
// answer is a *dtrack.APIError, as client-go returns them; 304 is one too.
func (s *Sink) call(ctx context.Context, method, path string, in, out any) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(s.cfg.URL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return s.send(req, out)
}

// send does req and decodes a 2xx JSON answer into out (when not nil).
func (s *Sink) send(req *http.Request, out any) (http.Header, error) {
	res, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.Header, &dtrack.APIError{StatusCode: res.StatusCode, Message: string(body)}
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return res.Header, fmt.Errorf("decode %s %s: %w", req.Method, req.URL.Path, err)
		}
	}
	return res.Header, nil
}

// target is where one workload goes: its project and its parents.
type target struct {
	name, version      string
	cluster, namespace ref // empty name: none
	tags               []string
}

// ref names a parent project and the tags it is created with.
type ref struct {
	name, version string
	tags          []string
}

func (t target) key() string    { return t.name + "\x00" + t.version }
func (t target) String() string { return fmt.Sprintf("project %q version %q", t.name, t.version) }

// target renders w's project and parents; errors are permanent.
func (s *Sink) target(w schemas.Workload) (target, error) {
	if w.Cluster == "" || w.Kind == "" || w.Name == "" {
		return target{}, sinks.Permanent(fmt.Errorf("workload %s: cluster, kind and name are required", w))
	}
	var t target
	var err error
	if t.name, err = render(s.tpl.name, w); err != nil {
		return target{}, sinks.Permanent(fmt.Errorf("workload %s: projectName: %w", w, err))
	}
	if t.version, err = render(s.tpl.version, w); err != nil {
		return target{}, sinks.Permanent(fmt.Errorf("workload %s: projectVersion: %w", w, err))
	}
	if s.cfg.hierarchy() {
		if t.cluster.name, err = render(s.tpl.cluster, w); err != nil {
			return target{}, sinks.Permanent(fmt.Errorf("workload %s: clusterProject: %w", w, err))
		}
		t.cluster.version = s.cfg.ParentVersion
		t.cluster.tags = []string{"cluster:" + w.Cluster}
		if w.Namespace != "" {
			if t.namespace.name, err = render(s.tpl.namespace, w); err != nil {
				return target{}, sinks.Permanent(fmt.Errorf("workload %s: namespaceProject: %w", w, err))
			}
			t.namespace.version = s.cfg.ParentVersion
			t.namespace.tags = []string{"cluster:" + w.Cluster, "namespace:" + w.Namespace}
		}
		for _, p := range []ref{t.cluster, t.namespace} {
			if p.name == t.name && p.version == t.version {
				return target{}, sinks.Permanent(fmt.Errorf("workload %s: projectName and projectVersion name the parent project %q %q", w, p.name, p.version))
			}
		}
	}
	t.tags = []string{"cluster:" + w.Cluster, "kind:" + w.Kind}
	if w.Namespace != "" {
		t.tags = append(t.tags, "namespace:"+w.Namespace)
	}
	t.tags = append(t.tags, s.cfg.Tags...)
	return t, nil
}

// normalizeTags lower-cases and trims tags (as Dependency-Track stores
// them), drops blank ones and ones with commas (multipart sends tags as one
// comma-separated field), dedupes and sorts.
func normalizeTags(tags []string) []dtrack.Tag {
	var names []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !strings.Contains(t, ",") && !slices.Contains(names, t) {
			names = append(names, t)
		}
	}
	slices.Sort(names)
	out := make([]dtrack.Tag, 0, len(names))
	for _, n := range names {
		out = append(out, dtrack.Tag{Name: n})
	}
	return out
}

// runtimes lists the serving runtimes a bomstream BOM names (components
// carrying the bomstream:runtime:name property).
func runtimes(body []byte) []string {
	var bom struct {
		Components []struct {
			Properties []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"properties"`
		} `json:"components"`
	}
	if json.Unmarshal(body, &bom) != nil {
		return nil
	}
	var out []string
	for _, c := range bom.Components {
		for _, p := range c.Properties {
			if p.Name == "bomstream:runtime:name" && p.Value != "" {
				out = append(out, "runtime:"+p.Value)
			}
		}
	}
	return out
}

func (s *Sink) lock(t target) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(t.key()))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

func (s *Sink) getState(t target) projectState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state[t.key()]
}

func (s *Sink) setState(t target, st projectState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == (projectState{}) {
		delete(s.state, t.key())
		return
	}
	s.state[t.key()] = st
}
