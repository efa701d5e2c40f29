package dtracktest_test

// The release lines of Options.Version, held to the "Dependency-Track 5.x"
// and "CycloneDX 1.7" sections of DEPENDENCY-TRACK.md point by point (the
// numbers are the section's).

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// onLines runs f on a double of each line.
func onLines(t *testing.T, f func(t *testing.T, line string, dt *dtracktest.Server)) {
	for _, line := range dtracktest.Lines() {
		t.Run(line, func(t *testing.T) { f(t, line, start(t, dtracktest.Options{Version: line})) })
	}
}

func isV5(line string) bool { return strings.HasPrefix(line, "5.") }

func TestLineShorthandAndVersion(t *testing.T) {
	for short, want := range map[string]string{"4.12": dtracktest.Line412, "4.14": dtracktest.Line414, "5.0": dtracktest.Line50, "5.1": dtracktest.Line51} {
		dt := start(t, dtracktest.Options{Version: short})
		var about struct{ Version string }
		if r := do(t, dt, http.MethodGet, "/api/version", "", nil); json.Unmarshal(r.body, &about) != nil || about.Version != want {
			t.Errorf("Version %q reports %s, want %s", short, r, want)
		}
	}
}

// Point 2: the upload's isLatest (4.14, 5.x; isLatestProjectVersion its
// alias) and isActive (5.1), and a multipart request without a bom part.
func TestLineUploadFields(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		bom := b64(bomJSON(t, vllm))
		r := putBOM(t, dt, key, map[string]any{"projectName": "a", "projectVersion": "1", "autoCreate": true, "isLatest": true, "bom": bom})
		if takes := line != dtracktest.Line412 && line != dtracktest.Line413; takes {
			waitDone(t, dt, key, token(t, r))
			if !project(t, dt, "a", "1").IsLatest {
				t.Errorf("isLatest on upload not applied at creation")
			}
		} else if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `Unrecognized field \"isLatest\"`) {
			t.Errorf("isLatest on %s: %s, want the mapping 400", line, r)
		}
		r = putBOM(t, dt, key, map[string]any{"projectName": "b", "projectVersion": "1", "autoCreate": true, "isLatestProjectVersion": true, "bom": bom})
		waitDone(t, dt, key, token(t, r))
		if !project(t, dt, "b", "1").IsLatest {
			t.Errorf("isLatestProjectVersion not applied")
		}

		r = putBOM(t, dt, key, map[string]any{"projectName": "b", "projectVersion": "1", "isActive": false, "bom": bom})
		if line != dtracktest.Line51 {
			if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `Unrecognized field \"isActive\"`) {
				t.Errorf("isActive on %s: %s, want the mapping 400", line, r)
			}
		} else {
			waitDone(t, dt, key, token(t, r))
			if project(t, dt, "b", "1").Active {
				t.Errorf("isActive false left an existing project active")
			}
			r = do(t, dt, http.MethodPost, "/api/v1/bom", key, form(t, map[string]string{"projectName": "b", "projectVersion": "1", "isActive": "true", "bom": string(bomJSON(t, vllm))}))
			waitDone(t, dt, key, token(t, r))
			if !project(t, dt, "b", "1").Active {
				t.Errorf("multipart isActive true did not reactivate")
			}
			r = putBOM(t, dt, key, map[string]any{"projectName": "c", "projectVersion": "1", "autoCreate": true, "isActive": false, "bom": bom})
			waitDone(t, dt, key, token(t, r))
			if project(t, dt, "c", "1").Active {
				t.Errorf("isActive false on auto-create made an active project")
			}
		}

		r = do(t, dt, http.MethodPost, "/api/v1/bom", key, form(t, map[string]string{"projectName": "b", "projectVersion": "1"}))
		if isV5(line) {
			if r.status != http.StatusBadRequest || string(r.body) != "No BOM file provided." {
				t.Errorf("multipart without bom on %s: %s", line, r)
			}
		} else if r.status != http.StatusOK || len(r.body) != 0 {
			t.Errorf("multipart without bom on %s: %s, want an empty 200", line, r)
		}
	})
}

// Point 2 (main): a gzip or zstd bom part on 5.1, read by the part's
// Content-Type header as BomResource.uploadBom does (the whole header
// string: application/gzip, application/x-gzip, application/zstd,
// application/x-zstd). Every other line reads the part as it is, so a
// compressed BOM is refused as what the real server sees: not JSON.
func TestLineCompressedBOMPart(t *testing.T) {
	bom := bomJSON(t, vllm, llama)
	gz, zs := gzipped(t, bom), zstded(t, bom)
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		for i, c := range []struct {
			ctype string
			data  []byte
		}{
			{"application/gzip", gz}, {"application/x-gzip", gz}, {"application/zstd", zs}, {"application/x-zstd", zs},
		} {
			name := fmt.Sprintf("enc-%d", i)
			r := do(t, dt, http.MethodPost, "/api/v1/bom", key, bomPart(t, name, c.ctype, c.data))
			if line != dtracktest.Line51 {
				if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "BOM is neither valid JSON nor XML") {
					t.Errorf("%s part on %s: %s, want the invalid-BOM 400", c.ctype, line, r)
				}
				if _, ok := dt.Project(name, "1"); !ok {
					t.Errorf("%s part on %s: the auto-created project is gone (it is committed before validation)", c.ctype, line)
				}
				continue
			}
			waitDone(t, dt, key, token(t, r))
			if p := project(t, dt, name, "1"); len(p.Components) != 2 || p.BomHash != schemas.BomHash(bom) {
				t.Errorf("%s part on 5.1 imported %d components, bomHash %s", c.ctype, len(p.Components), p.BomHash)
			}
		}
		if line != dtracktest.Line51 {
			return
		}
		// A type with a parameter is not one of the four strings: the
		// bytes are read as they are.
		r := do(t, dt, http.MethodPost, "/api/v1/bom", key, bomPart(t, "param", "application/gzip; q=1", gz))
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "BOM is neither valid JSON nor XML") {
			t.Errorf("gzip labelled with a parameter: %s", r)
		}
		// A part that does not decode: an IOException, 500 with no body,
		// after the project was resolved (and created).
		for name, data := range map[string][]byte{"plain-as-gzip": bom, "truncated": gz[:len(gz)/2]} {
			r := do(t, dt, http.MethodPost, "/api/v1/bom", key, bomPart(t, name, "application/gzip", data))
			if r.status != http.StatusInternalServerError || len(r.body) != 0 {
				t.Errorf("%s: %s, want an empty 500", name, r)
			}
			if _, ok := dt.Project(name, "1"); !ok {
				t.Errorf("%s: no project", name)
			}
		}
	})
}

// bomPart is a multipart upload (autoCreate) to project name version 1
// whose bom part has Content-Type ctype.
func bomPart(t *testing.T, name, ctype string, data []byte) multipartBody {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range map[string]string{"projectName": name, "projectVersion": "1", "autoCreate": "true"} {
		_ = mw.WriteField(k, v)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="bom"; filename="bom.json.gz"`)
	h.Set("Content-Type", ctype)
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = pw.Write(data)
	_ = mw.Close()
	return multipartBody{data: buf.Bytes(), ctype: mw.FormDataContentType()}
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t *testing.T, b []byte) []byte {
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zw.Close()
	return zw.EncodeAll(b, nil)
}

// Point 3: 5.x answers the upload with the project's UUID, and a
// time-ordered (version 7) token.
func TestLineUploadResponse(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		r := putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bomJSON(t, vllm))})
		var out struct{ Token, ProjectUUID string }
		out.ProjectUUID = "absent"
		var raw map[string]string
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatalf("%s", r)
		}
		out.Token = raw["token"]
		if v, ok := raw["projectUuid"]; ok {
			out.ProjectUUID = v
		}
		waitDone(t, dt, key, out.Token)
		p := project(t, dt, "p", "1")
		if isV5(line) && (out.ProjectUUID != p.UUID || out.Token[14] != '7') {
			t.Errorf("5.x upload answer %s: want projectUuid %s and a version 7 token", r, p.UUID)
		}
		if !isV5(line) && (out.ProjectUUID != "absent" || out.Token[14] != '4') {
			t.Errorf("4.x upload answer %s: want only a version 4 token", r)
		}
	})
}

// Point 4: fine-grained portfolio permissions on 5.x.
func TestLineFineGrainedPermissions(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		bom := b64(bomJSON(t, vllm))
		create := dt.NewKey(dtracktest.BOMUpload, dtracktest.PortfolioManagementCreate, dtracktest.PortfolioManagementUpdate, dtracktest.PortfolioManagementDelete, dtracktest.ViewPortfolio)
		r := putBOM(t, dt, create, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "projectTags": []map[string]string{{"name": "a"}}, "bom": bom})
		if !isV5(line) {
			if r.status != http.StatusUnauthorized || string(r.body) != "The principal does not have permission to create project." {
				t.Errorf("4.x autoCreate with PORTFOLIO_MANAGEMENT_CREATE: %s, want 401", r)
			}
			if r := do(t, dt, http.MethodPut, "/api/v1/project", create, map[string]any{"name": "q"}); r.status != http.StatusForbidden {
				t.Errorf("4.x PUT project with the fine-grained permission: %s, want 403", r)
			}
			return
		}
		waitDone(t, dt, create, token(t, r))
		r = putBOM(t, dt, create, map[string]any{"projectName": "p", "projectVersion": "1", "projectTags": []map[string]string{{"name": "b"}}, "bom": bom})
		waitDone(t, dt, create, token(t, r))
		if tags := project(t, dt, "p", "1").Tags; len(tags) != 1 || tags[0] != "b" {
			t.Errorf("tags with PORTFOLIO_MANAGEMENT_UPDATE: %v, want [b]", tags)
		}
		r = do(t, dt, http.MethodPut, "/api/v1/project", create, map[string]any{"name": "q"})
		if r.status != http.StatusCreated {
			t.Fatalf("PUT project with PORTFOLIO_MANAGEMENT_CREATE: %s", r)
		}
		var q struct{ UUID string }
		_ = json.Unmarshal(r.body, &q)
		if r := do(t, dt, http.MethodPatch, "/api/v1/project/"+q.UUID, create, map[string]any{"description": "x", "active": true}); r.status != http.StatusOK {
			t.Errorf("PATCH with PORTFOLIO_MANAGEMENT_UPDATE: %s", r)
		}
		if r := do(t, dt, http.MethodDelete, "/api/v1/project/"+q.UUID, create, nil); r.status != http.StatusNoContent {
			t.Errorf("DELETE with PORTFOLIO_MANAGEMENT_DELETE: %s", r)
		}
		only := dt.NewKey(dtracktest.BOMUpload, dtracktest.PortfolioManagementCreate)
		if r := do(t, dt, http.MethodDelete, "/api/v1/project/"+project(t, dt, "p", "1").UUID, only, nil); r.status != http.StatusForbidden {
			t.Errorf("DELETE with only PORTFOLIO_MANAGEMENT_CREATE: %s, want 403", r)
		}
	})
}

// Point 5: a missing and an inactive parent on upload.
func TestLineUploadParentErrors(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		bom := b64(bomJSON(t, vllm))
		r := putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "parentName": "gone", "parentVersion": "1", "bom": bom})
		want := "The parent component could not be found."
		if isV5(line) {
			want = "The parent project could not be found."
		}
		if r.status != http.StatusNotFound || string(r.body) != want {
			t.Errorf("missing parent: %s, want 404 %q", r, want)
		}
		parent, err := dt.CreateProject(dtracktest.Project{Name: "ns", Version: "1", Active: false})
		if err != nil {
			t.Fatal(err)
		}
		r = putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "parentUUID": parent.UUID, "bom": bom})
		switch {
		case isV5(line) && (r.status != http.StatusInternalServerError || string(r.body) != "Uncaught internal server error"):
			t.Errorf("5.x inactive parent: %s, want 500 Uncaught internal server error", r)
		case !isV5(line) && (r.status != http.StatusBadRequest || r.ctype != "application/problem+json" || !strings.Contains(string(r.body), "An inactive Parent cannot be selected as parent")):
			t.Errorf("4.x inactive parent: %s, want the 400 problem", r)
		}
		if _, ok := dt.Project("p", "1"); ok {
			t.Errorf("a project was created under a refused parent")
		}
	})
}

// Points 6, 9: collection projects, collectionLogic without NONE on 5.x,
// and the upload refused with each line's wording.
func TestLineCollections(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		r := do(t, dt, http.MethodPut, "/api/v1/project", key, map[string]any{"name": "c", "version": "1", "collectionLogic": dtracktest.CollectionAggregateDirectChildren})
		if line == dtracktest.Line412 {
			if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "collectionLogic") {
				t.Errorf("4.12 collectionLogic: %s, want the mapping 400", r)
			}
			return
		}
		var c map[string]any
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &c) != nil {
			t.Fatalf("create a collection project: %s", r)
		}
		if _, has := c["classifier"]; has == isV5(line) {
			t.Errorf("collection project classifier present=%v on %s: %s", has, line, r)
		}
		r = putBOM(t, dt, key, map[string]any{"projectName": "c", "projectVersion": "1", "bom": b64(bomJSON(t, vllm))})
		want := "BOM cannot be uploaded to collection project."
		if isV5(line) {
			want = "BOM cannot be uploaded to a collection project."
		}
		if r.status != http.StatusBadRequest || string(r.body) != want {
			t.Errorf("upload to a collection project: %s, want 400 %q", r, want)
		}
		r = do(t, dt, http.MethodPut, "/api/v1/project", key, map[string]any{"name": "plain", "collectionLogic": "NONE"})
		if isV5(line) != (r.status == http.StatusBadRequest && r.ctype == "application/problem+json") {
			t.Errorf("collectionLogic NONE on %s: %s", line, r)
		}
		r = do(t, dt, http.MethodPut, "/api/v1/project", key, map[string]any{"name": "plain2"})
		var p map[string]any
		_ = json.Unmarshal(r.body, &p)
		if logic, has := p["collectionLogic"]; has == isV5(line) || (has && logic != "NONE") {
			t.Errorf("plain project's collectionLogic on %s: %s", line, r)
		}
	})
}

// Points 8, 10: parent references in project bodies.
func TestLineProjectParents(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		r := do(t, dt, http.MethodPut, "/api/v1/project", key, map[string]any{"name": "p", "parent": map[string]any{"uuid": "00000000-0000-4000-8000-000000000000"}})
		if isV5(line) {
			if r.status != http.StatusNotFound || r.ctype != "application/problem+json" || !strings.Contains(string(r.body), `"title":"Resource does not exist"`) || !strings.Contains(string(r.body), "Parent project could not be found") {
				t.Errorf("5.x PUT with an unknown parent: %s", r)
			}
		} else if r.status != http.StatusCreated || strings.Contains(string(r.body), `"parent"`) {
			t.Errorf("4.x PUT with an unknown parent: %s, want 201 without a parent", r)
		}
		r = do(t, dt, http.MethodPut, "/api/v1/project", key, map[string]any{"name": "q", "parent": map[string]any{"name": "x"}})
		if isV5(line) != (r.status == http.StatusBadRequest && string(r.body) == "parent.uuid must be provided when parent is set") {
			t.Errorf("a parent without uuid on %s: %s", line, r)
		}
	})
}

// Point 9: the project list's shape and order, inactiveSince, and a
// cryptographic-asset component, which 5.x imports.
func TestLineProjectJSONAndProcessing(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		for _, v := range []string{"1", "3", "2"} {
			if _, err := dt.CreateProject(dtracktest.Project{Name: "p", Version: v, Active: v != "3"}); err != nil {
				t.Fatal(err)
			}
		}
		r := do(t, dt, http.MethodGet, "/api/v1/project?name=p", key, nil)
		var list []map[string]any
		if json.Unmarshal(r.body, &list) != nil || len(list) != 3 {
			t.Fatalf("list: %s", r)
		}
		var order []string
		for _, p := range list {
			order = append(order, p["version"].(string))
			_, tags := p["tags"]
			_, has := p["hasChildren"]
			if tags == isV5(line) || has != isV5(line) {
				t.Errorf("listed project on %s: tags present %v, hasChildren present %v", line, tags, has)
			}
			if _, since := p["inactiveSince"]; isV5(line) && since == p["active"].(bool) {
				t.Errorf("5.x inactiveSince present=%v for active=%v", since, p["active"])
			}
		}
		want := "3,2,1"
		if isV5(line) {
			want = "1,3,2"
		}
		if got := strings.Join(order, ","); got != want {
			t.Errorf("list order on %s: %s, want %s", line, got, want)
		}
		crypto := bomJSON(t, component{Type: "cryptographic-asset", Name: "aes"})
		r = putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "bom": b64(crypto)})
		waitDone(t, dt, key, token(t, r))
		if imported := project(t, dt, "p", "1").LastBomImport != 0; imported != isV5(line) {
			t.Errorf("cryptographic-asset imported=%v on %s", imported, line)
		}
	})
}

// Paging is Alpine's on both lines: pageNumber alone gives the first 100.
func TestLinePaging(t *testing.T) {
	onLines(t, func(t *testing.T, line string, dt *dtracktest.Server) {
		key := dt.NewKey(all...)
		for i := range 250 {
			if _, err := dt.CreateProject(dtracktest.Project{Name: fmt.Sprintf("ns/p%03d", i), Version: "current", Active: true}); err != nil {
				t.Fatal(err)
			}
		}
		count := func(q string) (int, string) {
			r := do(t, dt, http.MethodGet, "/api/v1/project"+q, key, nil)
			var list []struct{ Name string }
			_ = json.Unmarshal(r.body, &list)
			first := ""
			if len(list) > 0 {
				first = list[0].Name
			}
			if r.header.Get("X-Total-Count") != "250" {
				t.Errorf("%s: X-Total-Count %q", q, r.header.Get("X-Total-Count"))
			}
			return len(list), first
		}
		for q, want := range map[string]struct {
			n     int
			first string
		}{
			"": {100, "ns/p000"}, "?pageNumber=3": {100, "ns/p000"}, "?pageNumber=3&pageSize=100": {50, "ns/p200"},
			"?page=2&size=100": {100, "ns/p100"}, "?offset=240&limit=100": {10, "ns/p240"},
		} {
			if n, first := count(q); n != want.n || first != want.first {
				t.Errorf("GET /api/v1/project%s: %d from %s, want %d from %s", q, n, first, want.n, want.first)
			}
		}
	})
}

// CycloneDX 1.7: accepted and validated by 4.14.4 and 5.1, refused by the
// others with "Unrecognized specVersion 1.7".
func TestLineSpecVersion17(t *testing.T) {
	dir, ok := validate.SharedSchemaDir("cyclonedx-1.7", "bom-1.7.schema.json")
	if !ok && os.Getenv("CI") != "" {
		t.Fatal("../shared/schemas/cyclonedx-1.7 is missing: CI must provide the official schemas")
	}
	var v17 *validate.Validator
	if ok {
		var err error
		if v17, err = validate.New17(dir); err != nil || !v17.Official() {
			t.Fatalf("compile the official 1.7 schema from %s: %v", dir, err)
		}
	}
	for _, line := range dtracktest.Lines() {
		t.Run(line, func(t *testing.T) {
			dt := start(t, dtracktest.Options{Version: line, Validator17: v17})
			key := dt.NewKey(all...)
			bom := bytes.Replace(bomJSON(t, vllm), []byte(`"specVersion":"1.6"`), []byte(`"specVersion":"1.7"`), 1)
			bad := bytes.Replace(bomJSON(t, component{Type: "no-such-type", Name: "x"}), []byte(`"specVersion":"1.6"`), []byte(`"specVersion":"1.7"`), 1)
			r := putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bom)})
			if line == dtracktest.Line414 || line == dtracktest.Line51 {
				waitDone(t, dt, key, token(t, r))
				if f := project(t, dt, "p", "1").LastBomImportFormat; f != "CycloneDX 1.7" {
					t.Errorf("lastBomImportFormat %q", f)
				}
				r = putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "bom": b64(bad)})
				if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "Schema validation failed") {
					t.Errorf("an invalid 1.7 BOM: %s", r)
				}
				return
			}
			if r.status != http.StatusBadRequest || r.ctype != "application/problem+json" || !strings.Contains(string(r.body), `"detail":"Unrecognized specVersion 1.7"`) || strings.Contains(string(r.body), `"errors"`) {
				t.Errorf("1.7 on %s: %s, want the 400 problem without errors", line, r)
			}
		})
	}
}
