// Package gcstest starts fake-gcs-server in-process (memory backend) behind
// a small front that counts the writes reaching it and can fail requests on
// demand, for the tests of the gcs sink and of pipelines that use it.
//
//	srv := gcstest.Start(t, "boms")
//	raw := srv.Config("prod")  // the gcs sink's config block: bucket, prefix, endpoint, anonymous
//	...
//	srv.Objects(t, "prod/")    // what the bucket holds, with metadata and generations
//	srv.Writes()               // object writes the server accepted
//
// The storage client must use JSON reads (storage.WithJSONReads), which the
// gcs sink always does.
package gcstest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Server is a fake GCS with one bucket.
type Server struct {
	// URL is the base of the HTTP front, "http://127.0.0.1:<port>".
	URL string
	// Bucket is the bucket Start created.
	Bucket string
	// Fake is the fake-gcs-server instance behind the front.
	Fake *fakestorage.Server

	front *httptest.Server

	mu       sync.Mutex
	writes   int
	failNext []int // statuses for the next requests, in order
	lose     int   // write responses to lose
	fault    func(*http.Request) int
}

// Start starts a fake GCS holding an empty bucket called bucket; it stops
// when the test ends.
func Start(tb testing.TB, bucket string) *Server {
	tb.Helper()
	s := &Server{Bucket: bucket}
	s.front = httptest.NewUnstartedServer(nil)
	addr := "http://" + s.front.Listener.Addr().String()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener:  true,
		Scheme:      "http",
		ExternalURL: addr,
		PublicHost:  s.front.Listener.Addr().String(),
	})
	if err != nil {
		tb.Fatalf("gcstest: start fake-gcs-server: %v", err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	s.Fake = fake
	s.front.Config.Handler = s.handler(fake.HTTPHandler())
	s.front.Start()
	s.URL = s.front.URL
	tb.Cleanup(func() {
		s.front.Close()
		fake.Stop()
	})
	return s
}

// Endpoint is the JSON API endpoint for the storage client and the sink's
// endpoint key.
func (s *Server) Endpoint() string { return s.URL + "/storage/v1/" }

// Config is the configuration block of a gcs sink writing to this server
// under prefix: bucket, prefix, endpoint and anonymous.
func (s *Server) Config(prefix string) map[string]any {
	return map[string]any{"bucket": s.Bucket, "prefix": prefix, "endpoint": s.Endpoint(), "anonymous": true}
}

// Object is one stored object as the server sees it.
type Object struct {
	Name        string
	Generation  int64
	ContentType string
	Metadata    map[string]string
	Content     []byte
}

// Objects lists the live objects whose name starts with prefix, with their
// content, sorted by name.
func (s *Server) Objects(tb testing.TB, prefix string) []Object {
	tb.Helper()
	attrs, _, err := s.Fake.ListObjectsWithOptions(s.Bucket, fakestorage.ListOptions{Prefix: prefix})
	if err != nil {
		tb.Fatalf("gcstest: list %s: %v", prefix, err)
	}
	out := make([]Object, 0, len(attrs))
	for _, a := range attrs {
		o, err := s.Fake.GetObject(s.Bucket, a.Name)
		if err != nil {
			tb.Fatalf("gcstest: get %s: %v", a.Name, err)
		}
		out = append(out, Object{Name: a.Name, Generation: o.Generation, ContentType: o.ContentType, Metadata: o.Metadata, Content: o.Content})
	}
	return out
}

// Reset deletes every object, leaving the bucket empty. fake-gcs-server's
// memory backend looks objects up by scanning them, so long benchmarks
// reset it now and then to measure the sink rather than the scan.
func (s *Server) Reset(tb testing.TB) {
	tb.Helper()
	if err := s.Fake.Backend().DeleteAllFiles(); err != nil {
		tb.Fatalf("gcstest: reset: %v", err)
	}
	s.Fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: s.Bucket})
}

// Writes is the number of object writes (uploads, updates, deletes) the
// server accepted; refused ones (a failed precondition, an injected fault)
// do not count.
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// FailNext answers the next len(statuses) requests with these statuses, in
// order, without passing them to the server.
func (s *Server) FailNext(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, statuses...)
}

// LoseResponses lets the next n object writes reach the server, which
// applies them, and then answers the client 503 as if the response had been
// lost on the way: the retry that follows finds its own write done.
func (s *Server) LoseResponses(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose += n
}

// SetFault installs f, called for every request: a non-zero status is
// answered instead of passing the request on. nil removes it.
func (s *Server) SetFault(f func(*http.Request) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

func (s *Server) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		status := 0
		if len(s.failNext) > 0 {
			status, s.failNext = s.failNext[0], s.failNext[1:]
		}
		fault := s.fault
		lose := false
		if status == 0 && s.lose > 0 && isWrite(r) {
			s.lose--
			lose = true
		}
		s.mu.Unlock()
		if status == 0 && fault != nil {
			status = fault(r) // outside the lock: a fault may block
		}
		if status != 0 {
			writeError(w, status)
			return
		}
		var rec *statusRecorder
		if lose {
			rec = &statusRecorder{ResponseWriter: httptest.NewRecorder(), status: http.StatusOK}
		} else {
			rec = &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		}
		next.ServeHTTP(rec, r)
		if isWrite(r) && rec.status < 300 {
			s.mu.Lock()
			s.writes++
			s.mu.Unlock()
		}
		if lose {
			writeError(w, http.StatusServiceUnavailable)
		}
	})
}

var objectPath = regexp.MustCompile(`/b/[^/]+/o(/|$)`)

// isWrite reports whether r changes an object.
func isWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return objectPath.MatchString(r.URL.Path)
	}
	return false
}

// writeError answers as GCS does, with a JSON error body.
func writeError(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	text := http.StatusText(status)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"errors":[{"message":%q,"reason":"injected"}]}}`, status, text, text)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
