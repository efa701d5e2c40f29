package dtracktest_test

// The rest of the contract table, and the controls tests use.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

func TestVersionAndTeamSelf(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	r := do(t, dt, http.MethodGet, "/api/version", "", nil)
	var about struct{ Version, Application string }
	if r.status != http.StatusOK || json.Unmarshal(r.body, &about) != nil || about.Version != dtracktest.DefaultVersion || about.Application != "Dependency-Track" {
		t.Fatalf("/api/version: %s", r)
	}
	key := dt.NewKey(dtracktest.ViewPortfolio, dtracktest.BOMUpload)
	if !strings.HasPrefix(key, "odt_") {
		t.Fatalf("key %q is not in the 4.13 format", key)
	}
	r = do(t, dt, http.MethodGet, "/api/v1/team/self", key, nil)
	var self struct {
		Name        string
		Permissions []struct{ Name string }
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &self) != nil || len(self.Permissions) != 2 ||
		self.Permissions[0].Name != dtracktest.BOMUpload || self.Permissions[1].Name != dtracktest.ViewPortfolio {
		t.Fatalf("/api/v1/team/self: %s", r)
	}
	if r := do(t, dt, http.MethodGet, "/api/v1/team/self", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("team/self without a key: %s", r)
	}
}

func TestMappingAndValidationErrors(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	bom := b64(bomJSON(t, vllm))
	for name, c := range map[string]struct {
		body              map[string]any
		ctype, path, text string
	}{
		"unknown field": {map[string]any{"projectName": "p", "projectVersion": "1", "bom": bom, "projectGroup": "x"}, "application/problem+json", "", `Unrecognized field \"projectGroup\"`},
		"missing bom":   {map[string]any{"projectName": "p", "projectVersion": "1"}, "application/problem+json", "", "Missing required creator property 'bom'"},
		"wrong type":    {map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": "yes", "bom": bom}, "application/problem+json", "", "autoCreate"},
		"empty uuid":    {map[string]any{"project": "", "bom": bom}, "application/json", "project", "The project must be a valid 36 character UUID"},
		"blank name":    {map[string]any{"projectName": " ", "projectVersion": "1", "bom": bom}, "application/json", "projectName", "must not be blank"},
		"no version":    {map[string]any{"projectName": "p", "bom": bom}, "application/json", "projectVersion", "must not be blank"},
		"null bom":      {map[string]any{"projectName": "p", "projectVersion": "1", "bom": nil}, "application/json", "bom", "must not be null"},
	} {
		r := putBOM(t, dt, key, c.body)
		if r.status != http.StatusBadRequest || r.ctype != c.ctype || !strings.Contains(string(r.body), c.text) {
			t.Errorf("%s: got %s, want 400 %s with %q", name, r, c.ctype, c.text)
		}
		if c.path != "" && !strings.Contains(string(r.body), `"path":"`+c.path+`"`) {
			t.Errorf("%s: %s has no path %s", name, r, c.path)
		}
	}
	if r := do(t, dt, http.MethodPut, "/api/v1/bom", key, multipartBody{data: []byte("{}"), ctype: "text/plain"}); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("PUT text/plain: %s", r)
	}
	if r := do(t, dt, http.MethodPost, "/api/v1/bom", key, []byte("{}")); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("POST application/json: %s", r)
	}
	// Multipart without a bom part: 200, empty body.
	if r := do(t, dt, http.MethodPost, "/api/v1/bom", key, form(t, map[string]string{"projectName": "nobom", "projectVersion": "1", "autoCreate": "true"})); r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("multipart without bom: %s", r)
	}
	if len(dt.Projects()) != 1 {
		t.Errorf("projects: %v", dt.Projects())
	}
}

func TestParentsOnUpload(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	bom := b64(bomJSON(t, vllm))
	r := putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "parentName": "nope", "parentVersion": "1", "bom": bom})
	if r.status != http.StatusNotFound || string(r.body) != "The parent component could not be found." {
		t.Fatalf("unknown parent: %s", r)
	}
	r = putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "parentUUID": "NOT-A-UUID", "bom": bom})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"path":"parentUUID"`) {
		t.Fatalf("bad parent uuid: %s", r)
	}
	inactive, _ := dt.CreateProject(dtracktest.Project{Name: "old", Version: "1"})
	r = putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "parentUUID": inactive.UUID, "bom": bom})
	if r.status != http.StatusBadRequest || r.ctype != "application/problem+json" || !strings.Contains(string(r.body), "An inactive Parent cannot be selected as parent") {
		t.Fatalf("inactive parent: %s", r)
	}
	if _, ok := dt.Project("p", "1"); ok {
		t.Fatal("created despite the parent")
	}
}

func TestProjectRoutes(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	create := func(body map[string]any) response {
		return do(t, dt, http.MethodPut, "/api/v1/project", key, body)
	}
	decode := func(r response) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		return m
	}
	r := create(map[string]any{"name": "root", "version": "1", "active": true, "tags": []map[string]string{{"name": "A"}}})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %s", r)
	}
	root := decode(r)
	if root["classifier"] != "APPLICATION" || root["isLatest"] != false || root["collectionLogic"] != "NONE" {
		t.Fatalf("created: %v", root)
	}
	if r := create(map[string]any{"name": "root", "version": "1"}); r.status != http.StatusConflict || string(r.body) != "A project with the specified name already exists." {
		t.Fatalf("duplicate: %s", r)
	}
	if r := create(map[string]any{"version": "1"}); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"path":"name"`) {
		t.Fatalf("no name: %s", r)
	}
	// client-go sends "active":false, zero metrics and a zero uuid; all map.
	r = create(map[string]any{"name": "child", "version": "1", "active": true, "uuid": "00000000-0000-0000-0000-000000000000",
		"metrics": map[string]any{"components": 0}, "lastBomImport": 0, "parent": map[string]any{"uuid": root["uuid"]}})
	if r.status != http.StatusCreated {
		t.Fatalf("child: %s", r)
	}
	child := decode(r)
	if p := child["parent"].(map[string]any); p["uuid"] != root["uuid"] || p["name"] != "root" {
		t.Fatalf("child parent: %v", child["parent"])
	}
	// An unknown parent is dropped silently.
	if r := create(map[string]any{"name": "orphan", "version": "1", "parent": map[string]any{"uuid": "0b5bfd1c-8f04-4a35-9ad5-7b1ee5a0c8f1"}}); r.status != http.StatusCreated || decode(r)["parent"] != nil {
		t.Fatalf("unknown parent: %s", r)
	}
	// Lookup: versions listed; 404 text.
	r = do(t, dt, http.MethodGet, "/api/v1/project/lookup?name=root&version=1", key, nil)
	if r.status != http.StatusOK || len(decode(r)["versions"].([]any)) != 1 {
		t.Fatalf("lookup: %s", r)
	}
	if r := do(t, dt, http.MethodGet, "/api/v1/project/lookup?name=root&version=2", key, nil); r.status != http.StatusNotFound || string(r.body) != "The project could not be found." {
		t.Fatalf("lookup unknown: %s", r)
	}
	if r := do(t, dt, http.MethodGet, "/api/v1/project/lookup?name=root&version=1", dt.NewKey(dtracktest.BOMUpload), nil); r.status != http.StatusForbidden || len(r.body) != 0 {
		t.Fatalf("lookup without VIEW_PORTFOLIO: %s", r)
	}
	// Listing: paginated, X-Total-Count.
	for i := range 3 {
		create(map[string]any{"name": "many", "version": string(rune('a' + i))})
	}
	r = do(t, dt, http.MethodGet, "/api/v1/project?name=many&pageSize=2&pageNumber=1", key, nil)
	var list []map[string]any
	if json.Unmarshal(r.body, &list) != nil || len(list) != 2 || r.header.Get("X-Total-Count") != "3" || list[0]["version"] != "c" {
		t.Fatalf("list: %s %v", r, r.header)
	}
	r = do(t, dt, http.MethodGet, "/api/v1/project?onlyRoot=true", key, nil)
	if r.header.Get("X-Total-Count") != "5" { // root, orphan, 3 x many
		t.Fatalf("onlyRoot: %s %v", r, r.header)
	}
	r = do(t, dt, http.MethodGet, "/api/v1/project/"+root["uuid"].(string)+"/children", key, nil)
	if json.Unmarshal(r.body, &list) != nil || len(list) != 1 || list[0]["name"] != "child" {
		t.Fatalf("children: %s", r)
	}
	// POST replaces: omitted tags and parent are cleared.
	r = do(t, dt, http.MethodPost, "/api/v1/project", key, map[string]any{"uuid": child["uuid"], "name": "child", "version": "1", "active": true})
	if r.status != http.StatusOK {
		t.Fatalf("update: %s", r)
	}
	if c, _ := dt.ProjectByUUID(child["uuid"].(string)); c.Parent != "" {
		t.Fatalf("POST kept the parent: %+v", c)
	}
	r = do(t, dt, http.MethodPost, "/api/v1/project", key, map[string]any{"uuid": root["uuid"], "name": "root", "version": "1", "active": true})
	if rt, _ := dt.ProjectByUUID(root["uuid"].(string)); r.status != http.StatusOK || len(rt.Tags) != 0 {
		t.Fatalf("POST kept the tags: %s %+v", r, rt)
	}
	if r := do(t, dt, http.MethodPost, "/api/v1/project", key, map[string]any{"uuid": "0b5bfd1c-8f04-4a35-9ad5-7b1ee5a0c8f1", "name": "x"}); r.status != http.StatusNotFound {
		t.Fatalf("update unknown: %s", r)
	}
	// DELETE is recursive.
	do(t, dt, http.MethodPatch, "/api/v1/project/"+child["uuid"].(string), key, map[string]any{"active": true, "parent": map[string]any{"uuid": root["uuid"]}})
	if r := do(t, dt, http.MethodDelete, "/api/v1/project/"+root["uuid"].(string), key, nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	if _, ok := dt.ProjectByUUID(child["uuid"].(string)); ok {
		t.Fatal("child survived its parent's deletion")
	}
	if r := do(t, dt, http.MethodDelete, "/api/v1/project/"+root["uuid"].(string), key, nil); r.status != http.StatusNotFound || string(r.body) != "The UUID of the project could not be found." {
		t.Fatalf("delete again: %s", r)
	}
}

func TestVersionGatedBehaviour(t *testing.T) {
	bom := bomJSON(t, vllm)
	old := start(t, dtracktest.Options{Version: "4.11.7"})
	key := old.NewKey(all...)
	r := putBOM(t, old, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "projectTags": []map[string]string{{"name": "x"}}, "bom": b64(bom)})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `Unrecognized field \"projectTags\"`) {
		t.Fatalf("4.11 projectTags: %s", r)
	}
	older := start(t, dtracktest.Options{Version: "4.11.3"})
	key = older.NewKey(all...)
	r = putBOM(t, older, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bom)})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "Unrecognized specVersion 1.6") {
		t.Fatalf("4.11.3 and CycloneDX 1.6: %s", r)
	}
	v412 := start(t, dtracktest.Options{Version: "4.12.7"})
	key = v412.NewKey(all...)
	if r := do(t, v412, http.MethodPut, "/api/v1/project", key, map[string]any{"name": "c", "collectionLogic": "NONE"}); r.status != http.StatusBadRequest {
		t.Fatalf("4.12 collectionLogic: %s", r)
	}
}

func TestComponentsAsStored(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	// 1.5, which the double does not validate: 1.6 requires a type.
	bom, _ := json.Marshal(map[string]any{
		"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1,
		"metadata": map[string]any{"component": map[string]any{"type": "application", "name": "chat", "purl": "pkg:generic/chat@1",
			"components": []map[string]any{{"type": "library", "name": "nested-in-metadata"}}}},
		"components": []map[string]any{
			{"name": "no-type"},
			{"type": "library", "name": "Py_Pkg", "purl": "pkg:pypi/Py_Pkg@1.0"},
			{"type": "library", "name": "bad-purl", "purl": "pkg:npm/x@1?arch="},
			{"type": "machine-learning-model", "name": "m", "properties": []map[string]string{
				{"name": "bomstream:model:unpinned", "value": "true"}, {"name": "plain", "value": "v"}, {"name": "plain", "value": "v"}},
				"components": []map[string]any{{"type": "data", "name": "nested"}}},
		},
	})
	tok := token(t, putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bom)}))
	waitDone(t, dt, key, tok)
	p := project(t, dt, "p", "1")
	got := map[string]dtracktest.Component{}
	for _, c := range p.Components {
		got[c.Name] = c
	}
	if len(got) != 6 {
		t.Fatalf("components: %+v", p.Components)
	}
	if got["no-type"].Classifier != "LIBRARY" || got["m"].Classifier != "MACHINE_LEARNING_MODEL" || got["nested"].Classifier != "DATA" {
		t.Errorf("classifiers: %+v", got)
	}
	if got["Py_Pkg"].Purl != "pkg:pypi/py-pkg@1.0" || got["bad-purl"].Purl != "" {
		t.Errorf("purls: %q %q", got["Py_Pkg"].Purl, got["bad-purl"].Purl)
	}
	if want := []dtracktest.Property{{Group: "bomstream", Name: "model:unpinned", Value: "true"}, {Group: "", Name: "plain", Value: "v"}}; !slices.Equal(got["m"].Properties, want) {
		t.Errorf("properties: %+v", got["m"].Properties)
	}
	if _, ok := got["nested-in-metadata"]; !ok {
		t.Error("metadata.component.components not flattened in")
	}
	if p.Purl != "pkg:generic/chat@1" || p.Classifier != "APPLICATION" || p.Name != "p" || p.LastBomImportFormat != "CycloneDX 1.5" {
		t.Errorf("project metadata: %+v", p)
	}
}

func TestOutageRejectAndCallCountControls(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	bom := bomJSON(t, vllm)
	body := map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bom)}

	dt.Down(0)
	for _, path := range []string{"/api/version", "/api/v1/project/lookup?name=p&version=1"} {
		if r := do(t, dt, http.MethodGet, path, key, nil); r.status != http.StatusServiceUnavailable || len(r.body) != 0 {
			t.Fatalf("down, %s: %s", path, r)
		}
	}
	if r := putBOM(t, dt, key, body); r.status != http.StatusServiceUnavailable {
		t.Fatalf("down, upload: %s", r)
	}
	dt.Up()
	dt.Down(50 * time.Millisecond)
	if r := putBOM(t, dt, key, body); r.status != http.StatusServiceUnavailable {
		t.Fatalf("timed outage: %s", r)
	}
	// A timed outage ends by itself.
	deadline := time.Now().Add(30 * time.Second)
	for do(t, dt, http.MethodGet, "/api/version", key, nil).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("a 50 ms outage still on after 30 s")
		}
	}
	if _, ok := dt.Project("p", "1"); ok {
		t.Fatal("an upload during the outage created the project")
	}

	dt.RejectBOM(schemas.BomHash(bom), "$.components[0].name: too fancy")
	r := putBOM(t, dt, key, body)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"errors":["$.components[0].name: too fancy"]`) {
		t.Fatalf("rejected: %s", r)
	}
	dt.AcceptBOM(schemas.BomHash(bom))
	waitDone(t, dt, key, token(t, putBOM(t, dt, key, body)))
	remove := dt.Reject(func(b []byte) []string {
		if strings.Contains(string(b), "vLLM") {
			return []string{"$: no vLLM today"}
		}
		return nil
	})
	if r := putBOM(t, dt, key, body); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "no vLLM today") {
		t.Fatalf("predicate: %s", r)
	}
	remove()
	waitDone(t, dt, key, token(t, putBOM(t, dt, key, body)))

	if got := dt.Calls("PUT /api/v1/bom"); got != 6 {
		t.Fatalf("PUT /api/v1/bom calls: %d, want 6 (503s included)", got)
	}
	if got := dt.Processed(schemas.BomHash(bom)); got != 2 {
		t.Fatalf("processed: %d", got)
	}
	if !dt.Idle() {
		t.Fatal("not idle")
	}
}

// BytesIn counts the request bodies a route read, and Lookups the lookups
// of one project.
func TestBytesInAndLookups(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	body, err := json.Marshal(map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bomJSON(t, vllm))})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, dt, key, token(t, do(t, dt, http.MethodPut, "/api/v1/bom", key, body)))
	if got := dt.BytesIn("PUT /api/v1/bom"); got != int64(len(body)) {
		t.Errorf("BytesIn(PUT /api/v1/bom) = %d, want %d", got, len(body))
	}
	f := form(t, map[string]string{"projectName": "p", "projectVersion": "1", "bom": string(bomJSON(t, llama))})
	waitDone(t, dt, key, token(t, do(t, dt, http.MethodPost, "/api/v1/bom", key, f)))
	if got := dt.BytesIn("POST /api/v1/bom"); got != int64(len(f.data)) {
		t.Errorf("BytesIn(POST /api/v1/bom) = %d, want %d", got, len(f.data))
	}
	before := dt.Lookups("p", "1")
	do(t, dt, http.MethodGet, "/api/v1/project/lookup?name=p&version=1", key, nil)
	do(t, dt, http.MethodGet, "/api/v1/project/lookup?name=q&version=1", key, nil)
	if got := dt.Lookups("p", "1") - before; got != 1 || dt.Lookups("q", "1") != 1 {
		t.Errorf("Lookups: p %d, q %d, want 1 each", got, dt.Lookups("q", "1"))
	}
}
