package dtracktest_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// start runs a double (its schema validator is compiled once per test
// process, by validate.CycloneDX).
func start(t *testing.T, opts dtracktest.Options) *dtracktest.Server {
	t.Helper()
	return dtracktest.New(t, opts)
}

// all is every permission the tests hand out.
var all = []string{dtracktest.BOMUpload, dtracktest.ProjectCreationUpload, dtracktest.PortfolioManagement, dtracktest.ViewPortfolio}

// response is what a request got back.
type response struct {
	status int
	ctype  string
	body   []byte
	header http.Header
}

func (r response) String() string {
	return fmt.Sprintf("%d %s %s", r.status, r.ctype, truncate(string(r.body), 300))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// do sends one request; a nil body sends none, a non-string body is JSON.
func do(t *testing.T, dt *dtracktest.Server, method, path, key string, body any) response {
	t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case multipartBody:
		rd, ctype = bytes.NewReader(b.data), b.ctype
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/json"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, dt.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, ctype: res.Header.Get("Content-Type"), body: b, header: res.Header}
}

type multipartBody struct {
	data  []byte
	ctype string
}

// form builds a multipart/form-data body; "bom" is sent as a file part.
func form(t *testing.T, fields map[string]string) multipartBody {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		var w io.Writer
		var err error
		if k == "bom" {
			w, err = mw.CreateFormFile("bom", "bom.json")
		} else {
			w, err = mw.CreateFormField(k)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, v)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return multipartBody{data: buf.Bytes(), ctype: mw.FormDataContentType()}
}

// component is one BOM component for the tests' BOMs.
type component struct {
	Type, Name, Version, Purl, Ref string
}

// bomJSON is a CycloneDX 1.6 BOM of an application with components.
func bomJSON(t *testing.T, components ...component) []byte {
	t.Helper()
	cs := []map[string]any{}
	for _, c := range components {
		m := map[string]any{"type": c.Type, "name": c.Name}
		if c.Version != "" {
			m["version"] = c.Version
		}
		if c.Purl != "" {
			m["purl"] = c.Purl
		}
		if c.Ref != "" {
			m["bom-ref"] = c.Ref
		}
		cs = append(cs, m)
	}
	b, err := json.Marshal(map[string]any{
		"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
		"metadata":   map[string]any{"component": map[string]any{"type": "application", "name": "chat"}},
		"components": cs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	vllm  = component{Type: "application", Name: "vLLM", Version: "0.8.4", Purl: "pkg:pypi/vllm@0.8.4"}
	llama = component{Type: "machine-learning-model", Name: "meta-llama/Llama-3.1-8B", Purl: "pkg:huggingface/meta-llama/Llama-3.1-8B@abc"}
	image = component{Type: "container", Name: "vllm/vllm-openai", Version: "v0.8.4", Purl: "pkg:oci/vllm-openai@sha256%3Aaaaa?repository_url=docker.io/vllm/vllm-openai"}
	sgl   = component{Type: "application", Name: "SGLang", Version: "0.4.6", Purl: "pkg:pypi/sglang@0.4.6"}
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// putBOM uploads bom by name over PUT.
func putBOM(t *testing.T, dt *dtracktest.Server, key string, fields map[string]any) response {
	t.Helper()
	return do(t, dt, http.MethodPut, "/api/v1/bom", key, fields)
}

// token reads the token out of an upload's 200.
func token(t *testing.T, r response) string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("upload: %s", r)
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.Token == "" {
		t.Fatalf("upload answer %s: no token (%v)", r, err)
	}
	return out.Token
}

// processing asks the event token endpoint.
func processing(t *testing.T, dt *dtracktest.Server, key, tok string) bool {
	t.Helper()
	r := do(t, dt, http.MethodGet, "/api/v1/event/token/"+tok, key, nil)
	if r.status != http.StatusOK {
		t.Fatalf("token: %s", r)
	}
	var out struct {
		Processing *bool `json:"processing"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.Processing == nil {
		t.Fatalf("token answer %s: %v", r, err)
	}
	return *out.Processing
}

// waitDone polls the token until processing is false.
func waitDone(t *testing.T, dt *dtracktest.Server, key, tok string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for processing(t, dt, key, tok) {
		if time.Now().After(deadline) {
			t.Fatalf("token %s still processing", tok)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// project reads the double's state, failing when the project is absent.
func project(t *testing.T, dt *dtracktest.Server, name, version string) dtracktest.Project {
	t.Helper()
	p, ok := dt.Project(name, version)
	if !ok {
		t.Fatalf("project %s %s does not exist", name, version)
	}
	return p
}

func mustContain(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s %q does not contain %q", what, s, sub)
	}
}
