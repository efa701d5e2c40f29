// Package ocitest starts OCI registries in-process, for the tests of the
// oci sink and of pipelines that use it. Three registries, three ways of
// holding referrers:
//
//	GGCR          go-containerregistry's pkg/registry with its referrers API turned on
//	Distribution  distribution v3 with the in-memory driver and deletes enabled: no
//	              referrers API, so clients fall back to the referrers tag schema
//	Olareg        olareg in memory: the full referrers API
//
// Each runs behind a small front that counts the writes it accepted, can
// require HTTP basic auth (with read-only users), and can be taken down:
//
//	reg := ocitest.Start(t, ocitest.Olareg, ocitest.Options{})
//	img := reg.PushImage(t, "app", "v1")     // a random image; img.Image, img.Digest
//	raw := reg.Config()                      // the oci sink's config block: plainHTTP
//	...
//	reg.Referrers(t, "app", img.Digest, "application/vnd.cyclonedx+json")
//	reg.Writes()                             // PUT/POST/PATCH/DELETE the registry accepted
package ocitest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the registry's storage
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/olareg/olareg"
	olaregconfig "github.com/olareg/olareg/config"
	"github.com/sirupsen/logrus"

	"github.com/bomstream/bomstream/schemas"
)

var quietDistribution sync.Once

// Kind names a registry implementation.
type Kind string

// The registries Start can run.
const (
	GGCR         Kind = "ggcr"
	Distribution Kind = "distribution"
	Olareg       Kind = "olareg"
)

// Kinds are all the registries, for table tests.
var Kinds = []Kind{GGCR, Distribution, Olareg}

// User is an account of a registry started with Options.Users.
type User struct {
	Name, Password string
	// ReadOnly users get 403 on every write.
	ReadOnly bool
}

// Options of Start.
type Options struct {
	// Users, when set, make the registry require HTTP basic auth.
	Users []User
	// NoDeletes refuses manifest deletes (distribution and olareg; the
	// go-containerregistry registry always allows them): a client updating
	// a referrers tag-schema index cannot remove the old one.
	NoDeletes bool
}

// Registry is a running in-process registry.
type Registry struct {
	Kind Kind
	// Host is "127.0.0.1:<port>", the registry part of image references.
	Host string
	// URL is "http://" + Host.
	URL string
	// ReferrersAPI tells whether the registry serves the referrers API
	// (else clients use the referrers tag schema).
	ReferrersAPI bool

	users []User
	front *httptest.Server

	mu     sync.Mutex
	writes int
	down   bool
}

// Start starts a registry of kind k; it stops when the test ends.
func Start(tb testing.TB, k Kind, opts Options) *Registry {
	tb.Helper()
	r := &Registry{Kind: k, users: opts.Users}
	var inner http.Handler
	switch k {
	case GGCR:
		inner = ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0)))
		r.ReferrersAPI = true
	case Distribution:
		cfg := &configuration.Configuration{
			Storage: configuration.Storage{
				"inmemory":    configuration.Parameters{},
				"delete":      configuration.Parameters{"enabled": !opts.NoDeletes},
				"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
			},
		}
		cfg.Log.AccessLog.Disabled = true
		quietDistribution.Do(func() {
			// distribution logs every request through logrus' standard
			// logger, which NewApp offers no way to replace; the test
			// process has no other use for it.
			logrus.StandardLogger().SetOutput(io.Discard)
		})
		inner = handlers.NewApp(context.Background(), cfg)
	case Olareg:
		deletes := !opts.NoDeletes
		srv := olareg.New(olaregconfig.Config{
			Storage: olaregconfig.ConfigStorage{StoreType: olaregconfig.StoreMem},
			API:     olaregconfig.ConfigAPI{DeleteEnabled: &deletes},
		})
		tb.Cleanup(func() { _ = srv.Close() })
		inner = srv
		r.ReferrersAPI = true
	default:
		tb.Fatalf("ocitest: unknown registry kind %q", k)
	}
	r.front = httptest.NewServer(r.handler(inner))
	tb.Cleanup(r.front.Close)
	r.URL = r.front.URL
	r.Host = strings.TrimPrefix(r.front.URL, "http://")
	return r
}

// StartAll starts one registry of each kind.
func StartAll(tb testing.TB, opts Options) []*Registry {
	tb.Helper()
	out := make([]*Registry, 0, len(Kinds))
	for _, k := range Kinds {
		out = append(out, Start(tb, k, opts))
	}
	return out
}

// Config is the configuration block of an oci sink for this registry:
// plainHTTP, and dockerConfig when the registry has users (the first
// writer's credentials, in a file under dir).
func (r *Registry) Config(tb testing.TB) map[string]any {
	tb.Helper()
	raw := map[string]any{"plainHTTP": true}
	for _, u := range r.users {
		if !u.ReadOnly {
			raw["dockerConfig"] = WriteDockerConfig(tb, tb.TempDir(), map[string]User{r.Host: u})
			break
		}
	}
	return raw
}

// WriteDockerConfig writes a docker config.json in dir with an auths entry
// per registry host, and returns its path.
func WriteDockerConfig(tb testing.TB, dir string, auths map[string]User) string {
	tb.Helper()
	type entry struct {
		Auth string `json:"auth"`
	}
	cfg := struct {
		Auths map[string]entry `json:"auths"`
	}{Auths: map[string]entry{}}
	for host, u := range auths {
		cfg.Auths[host] = entry{Auth: base64.StdEncoding.EncodeToString([]byte(u.Name + ":" + u.Password))}
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatalf("ocitest: %v", err)
	}
	return path
}

// PushImage pushes a small random image as repo:tag and returns it as a pod
// status would name it: the reference and the manifest digest.
func (r *Registry) PushImage(tb testing.TB, repo, tag string) schemas.ImageDigest {
	tb.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		tb.Fatalf("ocitest: random image: %v", err)
	}
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		tb.Fatalf("ocitest: %v", err)
	}
	if err := remote.Write(ref, img, r.remoteOptions()...); err != nil {
		tb.Fatalf("ocitest: push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		tb.Fatalf("ocitest: %v", err)
	}
	return schemas.ImageDigest{Image: ref.String(), Digest: d.String()}
}

// Referrers lists, with go-containerregistry's client (another client than
// the sink's: it reads the referrers API or the tag schema, whichever the
// registry has), the referrers of repo@subject with artifactType.
func (r *Registry) Referrers(tb testing.TB, repo, subject, artifactType string) []v1.Descriptor {
	tb.Helper()
	d, err := name.NewDigest(r.Host+"/"+repo+"@"+subject, name.Insecure)
	if err != nil {
		tb.Fatalf("ocitest: %v", err)
	}
	opts := append(r.remoteOptions(), remote.WithFilter("artifactType", artifactType))
	idx, err := remote.Referrers(d, opts...)
	if err != nil {
		tb.Fatalf("ocitest: referrers of %s: %v", d, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		tb.Fatalf("ocitest: %v", err)
	}
	return m.Manifests
}

// Fetch returns the bytes of a manifest or blob of repo by digest.
func (r *Registry) Fetch(tb testing.TB, repo, digest string, manifest bool) []byte {
	tb.Helper()
	kind := "blobs"
	if manifest {
		kind = "manifests"
	}
	req, _ := http.NewRequest(http.MethodGet, r.URL+"/v2/"+repo+"/"+kind+"/"+digest, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json")
	for _, u := range r.users {
		req.SetBasicAuth(u.Name, u.Password)
		break
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("ocitest: fetch %s: %v", digest, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("ocitest: fetch %s: %s %v", digest, resp.Status, err)
	}
	return []byte(b.String())
}

// HasTag reports whether repo has the tag.
func (r *Registry) HasTag(tb testing.TB, repo, tag string) bool {
	tb.Helper()
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		tb.Fatalf("ocitest: %v", err)
	}
	_, err = remote.Head(ref, r.remoteOptions()...)
	return err == nil
}

func (r *Registry) remoteOptions() []remote.Option {
	for _, u := range r.users {
		if !u.ReadOnly {
			return []remote.Option{remote.WithAuth(&authn.Basic{Username: u.Name, Password: u.Password})}
		}
	}
	return nil
}

// Writes is the number of write requests (PUT, POST, PATCH, DELETE) the
// registry answered with success.
func (r *Registry) Writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes
}

// SetDown makes every request fail with 503 while down.
func (r *Registry) SetDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *Registry) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		down := r.down
		r.mu.Unlock()
		if down {
			http.Error(w, `{"errors":[{"code":"UNAVAILABLE","message":"down for the test"}]}`, http.StatusServiceUnavailable)
			return
		}
		write := req.Method != http.MethodGet && req.Method != http.MethodHead
		if len(r.users) > 0 {
			name, pass, ok := req.BasicAuth()
			var user *User
			for i, u := range r.users {
				if ok && u.Name == name && u.Password == pass {
					user = &r.users[i]
				}
			}
			if user == nil {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
				return
			}
			if write && user.ReadOnly {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`))
				return
			}
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, req)
		if write && rec.status < 300 {
			r.mu.Lock()
			r.writes++
			r.mu.Unlock()
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(status int) {
	s.status = status
	s.ResponseWriter.WriteHeader(status)
}
