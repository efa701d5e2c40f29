package dtracktest_test

// One test per behaviour listed at the end of DEPENDENCY-TRACK.md, in its
// order and named after it.

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

// 1. PUT with no key or a bad key gives 401 with an empty body. A key without
// BOM_UPLOAD gives 403 with an empty body.
func TestBehaviour01_NoOrBadKeyIs401_NoBOMUploadIs403(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	body := map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bomJSON(t, vllm))}
	for name, key := range map[string]string{"no key": "", "bad key": "odt_nope_nope"} {
		r := putBOM(t, dt, key, body)
		if r.status != http.StatusUnauthorized || len(r.body) != 0 {
			t.Errorf("%s: got %s, want 401 with an empty body", name, r)
		}
	}
	viewer := dt.NewKey(dtracktest.ViewPortfolio, dtracktest.PortfolioManagement)
	if r := putBOM(t, dt, viewer, body); r.status != http.StatusForbidden || len(r.body) != 0 {
		t.Errorf("key without BOM_UPLOAD: got %s, want 403 with an empty body", r)
	}
	// Multipart is guarded the same way.
	if r := do(t, dt, http.MethodPost, "/api/v1/bom", viewer, form(t, map[string]string{"projectName": "p", "bom": "{}"})); r.status != http.StatusForbidden || len(r.body) != 0 {
		t.Errorf("multipart, key without BOM_UPLOAD: got %s, want 403 with an empty body", r)
	}
	if n := len(dt.Projects()); n != 0 {
		t.Errorf("%d projects created by refused uploads", n)
	}
}

// 2. PUT for an unknown name/version with autoCreate=false gives 404 and the
// raw text "The project could not be found."; no project is created.
func TestBehaviour02_UnknownProjectWithoutAutoCreateIs404(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	r := putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": false, "bom": b64(bomJSON(t, vllm))})
	if r.status != http.StatusNotFound || string(r.body) != "The project could not be found." {
		t.Fatalf("got %s, want 404 with the raw text", r)
	}
	if _, ok := dt.Project("p", "1"); ok {
		t.Fatal("a project was created")
	}
	// UUID mode, unknown UUID: the same.
	r = putBOM(t, dt, key, map[string]any{"project": "0b5bfd1c-8f04-4a35-9ad5-7b1ee5a0c8f1", "bom": b64(bomJSON(t, vllm))})
	if r.status != http.StatusNotFound || string(r.body) != "The project could not be found." {
		t.Fatalf("uuid mode: got %s, want 404 with the raw text", r)
	}
}

// 3. autoCreate=true with only BOM_UPLOAD gives 401 and the text "The
// principal does not have permission to create project."
func TestBehaviour03_AutoCreateWithOnlyBOMUploadIs401(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(dtracktest.BOMUpload)
	body := map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bomJSON(t, vllm))}
	r := putBOM(t, dt, key, body)
	if r.status != http.StatusUnauthorized || string(r.body) != "The principal does not have permission to create project." {
		t.Fatalf("got %s, want 401 with the text", r)
	}
	if _, ok := dt.Project("p", "1"); ok {
		t.Fatal("a project was created")
	}
	// Either creation permission is enough.
	for _, perm := range []string{dtracktest.ProjectCreationUpload, dtracktest.PortfolioManagement} {
		dt.SetPermissions(key, dtracktest.BOMUpload, perm)
		body["projectVersion"] = perm
		token(t, putBOM(t, dt, key, body))
	}
}

// 4. Non-padded or newline-wrapped base64 gives 400 with a JSON array whose
// element has path "bom". It is not problem+json.
func TestBehaviour04_MalformedBase64IsValidationArray(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	good := b64(bomJSON(t, vllm))
	wrapped := good[:64] + "\n" + good[64:]
	unpadded := strings.TrimRight(good, "=")
	if unpadded == good {
		unpadded = good[:len(good)-1] // make it not a multiple of 4
	}
	urlSafe := strings.NewReplacer("+", "-", "/", "_").Replace(b64([]byte("\xfb\xff\xfe??>>")))
	for name, bom := range map[string]string{"newline-wrapped": wrapped, "unpadded": unpadded, "url-safe": urlSafe} {
		r := putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": bom})
		if r.status != http.StatusBadRequest || r.ctype != "application/json" {
			t.Fatalf("%s: got %s, want 400 application/json", name, r)
		}
		var vs []struct {
			Message, MessageTemplate, Path string
		}
		if err := json.Unmarshal(r.body, &vs); err != nil || len(vs) == 0 {
			t.Fatalf("%s: body %s is not a non-empty JSON array: %v", name, r, err)
		}
		if vs[0].Path != "bom" || vs[0].Message != "The BOM must be Base64 encoded" {
			t.Fatalf("%s: got %+v, want path bom", name, vs[0])
		}
	}
	// Bean validation runs before project resolution: nothing was created.
	if _, ok := dt.Project("p", "1"); ok {
		t.Fatal("a project was created")
	}
}

// 5. An invalid component type, or specVersion "1.7", gives 400
// application/problem+json with title "The uploaded BOM is invalid". When
// autoCreate=true the project still exists afterwards.
func TestBehaviour05_InvalidBOMIsProblemJSONAndAutoCreatedProjectStays(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	badType := bomJSON(t, component{Type: "gadget", Name: "x"})
	v17 := []byte(strings.Replace(string(bomJSON(t, vllm)), `"specVersion":"1.6"`, `"specVersion":"1.7"`, 1))
	for name, c := range map[string]struct {
		bom        []byte
		detail     string
		wantErrors bool
	}{
		"bad type":    {badType, "Schema validation failed", true},
		"1.7":         {v17, "Unrecognized specVersion 1.7", false},
		"not json":    {[]byte("<bom>"), "BOM is neither valid JSON nor XML", false},
		"no version?": {[]byte(`{"bomFormat":"CycloneDX"}`), "Unable to determine schema version from JSON", false},
	} {
		r := putBOM(t, dt, key, map[string]any{"projectName": "p-" + name, "projectVersion": "1", "autoCreate": true, "bom": b64(c.bom)})
		if r.status != http.StatusBadRequest || r.ctype != "application/problem+json" {
			t.Fatalf("%s: got %s, want 400 application/problem+json", name, r)
		}
		var p struct {
			Status        int
			Title, Detail string
			Errors        []string
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Status != 400 || p.Title != "The uploaded BOM is invalid" || p.Detail != c.detail {
			t.Fatalf("%s: got %+v", name, p)
		}
		if c.wantErrors {
			if len(p.Errors) == 0 || !strings.HasPrefix(p.Errors[0], "$.components[0].type: ") {
				t.Fatalf("%s: errors %q, want the schema error of $.components[0].type", name, p.Errors)
			}
		} else if strings.Contains(string(r.body), `"errors"`) {
			t.Fatalf("%s: errors present in %s, want them omitted when empty", name, r)
		}
		pr := project(t, dt, "p-"+name, "1") // committed before validation
		if pr.LastBomImport != 0 || len(pr.Components) != 0 {
			t.Fatalf("%s: project holds an import: %+v", name, pr)
		}
	}
	// Multipart validates the same way.
	r := do(t, dt, http.MethodPost, "/api/v1/bom", key, form(t, map[string]string{"projectName": "mp", "projectVersion": "1", "autoCreate": "true", "bom": string(badType)}))
	if r.status != http.StatusBadRequest || r.ctype != "application/problem+json" {
		t.Fatalf("multipart: got %s", r)
	}
	project(t, dt, "mp", "1")
}

// 6. A bom string longer than 20,000,000 characters over PUT gives 400
// problem+json with title "The provided JSON payload could not be mapped".
// The same BOM over multipart succeeds.
func TestBehaviour06_OversizePutIsMappingProblemAndMultipartSucceeds(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	big := largeBOM(t, dtracktest.PutLimit*3/4+1024) // base64 of it is just over the limit
	if n := len(b64(big)); n <= dtracktest.PutLimit {
		t.Fatalf("test BOM encodes to %d characters, not over the limit", n)
	}
	r := putBOM(t, dt, key, map[string]any{"projectName": "big", "projectVersion": "1", "autoCreate": true, "bom": b64(big)})
	if r.status != http.StatusBadRequest || r.ctype != "application/problem+json" {
		t.Fatalf("PUT: got %s, want 400 problem+json", r)
	}
	var p struct{ Title, Detail string }
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Title != "The provided JSON payload could not be mapped" {
		t.Fatalf("PUT: title %q", p.Title)
	}
	mustContain(t, "detail", p.Detail, `Please use the "POST /api/v1/bom" endpoint with Content-Type "multipart/form-data" instead.`)
	if _, ok := dt.Project("big", "1"); ok {
		t.Fatal("a mapping failure created the project")
	}
	// Exactly at the limit still maps.
	atLimit := largeBOM(t, dtracktest.PutLimit*3/4)
	if n := len(b64(atLimit)); n != dtracktest.PutLimit {
		t.Fatalf("at-limit BOM encodes to %d characters", n)
	}
	waitDone(t, dt, key, token(t, putBOM(t, dt, key, map[string]any{"projectName": "limit", "projectVersion": "1", "autoCreate": true, "bom": b64(atLimit)})))

	tok := token(t, do(t, dt, http.MethodPost, "/api/v1/bom", key, form(t, map[string]string{
		"projectName": "big", "projectVersion": "1", "autoCreate": "true", "bom": string(big)})))
	waitDone(t, dt, key, tok)
	if got := project(t, dt, "big", "1"); got.BomHash != schemas.BomHash(big) {
		t.Fatalf("multipart import holds %s, want %s", got.BomHash, schemas.BomHash(big))
	}
}

// largeBOM is a valid CycloneDX 1.6 BOM of exactly n bytes (n large), padded
// with a component description.
func largeBOM(t *testing.T, n int) []byte {
	t.Helper()
	base := bomJSON(t, component{Type: "library", Name: "pad"})
	// Insert "description":"xxx" into the component; 17 bytes of syntax.
	marker := `"name":"pad"`
	pad := n - len(base) - len(`,"description":""`)
	if pad < 0 {
		t.Fatalf("n %d too small", n)
	}
	out := strings.Replace(string(base), marker, marker+`,"description":"`+strings.Repeat("x", pad)+`"`, 1)
	if len(out) != n {
		t.Fatalf("built %d bytes, want %d", len(out), n)
	}
	return []byte(out)
}

// 7. Uploading BOM B after BOM A leaves exactly B's components: removed ones
// are gone, and unchanged identities keep their UUIDs.
func TestBehaviour07_ReuploadReplacesComponentsAndKeepsUUIDs(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	a := bomJSON(t, vllm, llama, image)
	twin := image
	twin.Ref = "twin"
	b := bomJSON(t, sgl, llama, image, twin) // vLLM replaced; a duplicate identity collapses
	upload := func(bom []byte) {
		waitDone(t, dt, key, token(t, putBOM(t, dt, key, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bom)})))
	}
	upload(a)
	before := uuids(project(t, dt, "p", "1"))
	if len(before) != 3 {
		t.Fatalf("after A: %v", before)
	}
	upload(b)
	pr := project(t, dt, "p", "1")
	after := uuids(pr)
	if len(after) != 3 {
		t.Fatalf("after B: %v, want exactly B's 3 distinct components", after)
	}
	if _, ok := after["vLLM"]; ok {
		t.Fatal("vLLM, absent from B, is still there")
	}
	for _, n := range []string{llama.Name, image.Name} {
		if after[n] != before[n] {
			t.Errorf("%s changed UUID: %s -> %s", n, before[n], after[n])
		}
	}
	if after["SGLang"] == "" {
		t.Error("SGLang missing")
	}
	if pr.BomHash != schemas.BomHash(b) || pr.LastBomImportFormat != "CycloneDX 1.6" {
		t.Errorf("project after B: %+v", pr)
	}
	// A changed purl is a new identity: a new UUID.
	moved := llama
	moved.Purl = "pkg:huggingface/meta-llama/Llama-3.1-8B@def"
	upload(bomJSON(t, sgl, moved, image))
	if got := uuids(project(t, dt, "p", "1")); got[llama.Name] == after[llama.Name] {
		t.Error("a changed purl kept the component's UUID")
	}
}

func uuids(p dtracktest.Project) map[string]string {
	out := map[string]string{}
	for _, c := range p.Components {
		out[c.Name] = c.UUID
	}
	return out
}

// 8. The token reports processing:true and then false. An unknown UUID gives
// false. A BOM that fails processing (cryptographic-asset) also ends false,
// with no component change and lastBomImport unchanged.
func TestBehaviour08_TokenProcessingStates(t *testing.T) {
	dt := start(t, dtracktest.Options{ProcessingDelay: 100 * time.Millisecond, AnalysisDelay: 100 * time.Millisecond})
	key := dt.NewKey(all...)
	body := map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true, "bom": b64(bomJSON(t, vllm))}
	tok := token(t, putBOM(t, dt, key, body))
	if !processing(t, dt, key, tok) {
		t.Fatal("token not processing right after the upload")
	}
	// The import commits, and the token stays true through "analysis".
	deadline := time.Now().Add(10 * time.Second)
	for project(t, dt, "p", "1").LastBomImport == 0 {
		if time.Now().After(deadline) {
			t.Fatal("never imported")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !processing(t, dt, key, tok) {
		t.Fatal("token false right after the import, want true until analysis ends")
	}
	waitDone(t, dt, key, tok)
	if processing(t, dt, key, "6f8f35d8-1c4a-4d8e-9c41-5f5f0f6c2a11") {
		t.Fatal("unknown token is processing")
	}
	r := do(t, dt, http.MethodGet, "/api/v1/event/token/not-a-uuid", key, nil)
	if r.status != http.StatusBadRequest || !strings.HasPrefix(string(r.body), "[") {
		t.Fatalf("bad token: got %s, want a 400 validation array", r)
	}
	if r := do(t, dt, http.MethodGet, "/api/v1/event/token/"+tok, "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("token without a key: got %s, want 401", r)
	}

	before := project(t, dt, "p", "1")
	crypto := bomJSON(t, sgl, component{Type: "cryptographic-asset", Name: "aes"})
	body["bom"] = b64(crypto)
	tok = token(t, putBOM(t, dt, key, body)) // it passes schema validation
	waitDone(t, dt, key, tok)
	after := project(t, dt, "p", "1")
	if after.LastBomImport != before.LastBomImport || !slices.Equal(names(after), names(before)) {
		t.Fatalf("failed processing changed the project: %+v -> %+v", before, after)
	}
	if dt.FailedProcessing(schemas.BomHash(crypto)) != 1 || dt.Processed(schemas.BomHash(crypto)) != 0 {
		t.Fatal("failure not recorded")
	}
}

func names(p dtracktest.Project) []string {
	var out []string
	for _, c := range p.Components {
		out = append(out, c.Name+"/"+c.UUID)
	}
	slices.Sort(out)
	return out
}

// 9. A PATCH without active reactivates an inactive project, and a PATCH
// without isLatest clears isLatest. An identical PATCH gives 304.
// Deactivating a parent that has active children gives 409.
func TestBehaviour09_PatchQuirks(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	key := dt.NewKey(all...)
	parent, err := dt.CreateProject(dtracktest.Project{Name: "parent", Version: "1", Active: true})
	if err != nil {
		t.Fatal(err)
	}
	child, err := dt.CreateProject(dtracktest.Project{Name: "child", Version: "1", Active: false, IsLatest: true, Parent: parent.UUID})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(uuid string, body map[string]any) response {
		return do(t, dt, http.MethodPatch, "/api/v1/project/"+uuid, key, body)
	}
	// Only a description: active comes back, isLatest goes.
	if r := patch(child.UUID, map[string]any{"description": "x"}); r.status != http.StatusOK {
		t.Fatalf("patch: %s", r)
	}
	got, _ := dt.ProjectByUUID(child.UUID)
	if !got.Active || got.IsLatest {
		t.Fatalf("after a PATCH without active and isLatest: active=%v isLatest=%v, want true and false", got.Active, got.IsLatest)
	}
	// Sending both keeps them; the same body again is 304 with no body.
	full := map[string]any{"active": false, "isLatest": true}
	if r := patch(child.UUID, full); r.status != http.StatusOK {
		t.Fatalf("patch: %s", r)
	}
	if r := patch(child.UUID, full); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("identical patch: got %s, want 304 empty", r)
	}
	got, _ = dt.ProjectByUUID(child.UUID)
	if got.Active || !got.IsLatest {
		t.Fatalf("after the full PATCH: %+v", got)
	}
	// The parent can go inactive while its only child is inactive, not when
	// the child is active.
	if r := patch(child.UUID, map[string]any{"active": true, "isLatest": true}); r.status != http.StatusOK {
		t.Fatalf("reactivate child: %s", r)
	}
	r := patch(parent.UUID, map[string]any{"active": false, "isLatest": false})
	if r.status != http.StatusConflict || string(r.body) != "Project cannot be set to inactive if active children are present." {
		t.Fatalf("deactivate parent of an active child: got %s, want 409", r)
	}
	if r := patch("0b5bfd1c-8f04-4a35-9ad5-7b1ee5a0c8f1", full); r.status != http.StatusNotFound {
		t.Fatalf("unknown uuid: %s", r)
	}
	if r := patch(child.UUID, map[string]any{"active": true, "isLatest": true, "parent": map[string]any{"uuid": "0b5bfd1c-8f04-4a35-9ad5-7b1ee5a0c8f1"}}); r.status != http.StatusNotFound || string(r.body) != "The UUID of the parent project could not be found." {
		t.Fatalf("unknown parent: %s", r)
	}
	if r := patch(child.UUID, map[string]any{"active": true, "isLatest": true, "bogus": 1}); r.status != http.StatusBadRequest || r.ctype != "application/problem+json" {
		t.Fatalf("unknown field: %s", r)
	}
	if r := do(t, dt, http.MethodPatch, "/api/v1/project/"+child.UUID, dt.NewKey(dtracktest.ViewPortfolio), full); r.status != http.StatusForbidden {
		t.Fatalf("without PORTFOLIO_MANAGEMENT: %s", r)
	}
}

// 10. Uploads to an existing project ignore parent* and
// isLatestProjectVersion/isLatest; tags are replaced only with
// PORTFOLIO_MANAGEMENT; multipart takes isLatest and CSV projectTags;
// uploads to collectionLogic != NONE give 400.
func TestBehaviour10_UploadsToExistingProjects(t *testing.T) {
	dt := start(t, dtracktest.Options{})
	admin := dt.NewKey(all...)
	ci := dt.NewKey(dtracktest.BOMUpload, dtracktest.ProjectCreationUpload)
	parentA, _ := dt.CreateProject(dtracktest.Project{Name: "a", Version: "1", Active: true})
	parentB, _ := dt.CreateProject(dtracktest.Project{Name: "b", Version: "1", Active: true})
	bom := b64(bomJSON(t, vllm))

	// Created under A with tags, by a key that may only create.
	waitDone(t, dt, ci, token(t, putBOM(t, dt, ci, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true,
		"parentUUID": parentA.UUID, "isLatestProjectVersion": true, "projectTags": []map[string]string{{"name": "One"}, {"name": " two "}}, "bom": bom})))
	p := project(t, dt, "p", "1")
	if p.Parent != parentA.UUID || !p.IsLatest || !slices.Equal(p.Tags, []string{"one", "two"}) {
		t.Fatalf("created project: %+v", p)
	}
	// Again, naming B, isLatest false and other tags: parent and isLatest are
	// ignored, and the tags stay because the key lacks PORTFOLIO_MANAGEMENT
	// (the upload still succeeds).
	waitDone(t, dt, ci, token(t, putBOM(t, dt, ci, map[string]any{"projectName": "p", "projectVersion": "1", "autoCreate": true,
		"parentUUID": parentB.UUID, "isLatestProjectVersion": false, "projectTags": []map[string]string{{"name": "three"}}, "bom": bom})))
	p = project(t, dt, "p", "1")
	if p.Parent != parentA.UUID || !p.IsLatest || !slices.Equal(p.Tags, []string{"one", "two"}) {
		t.Fatalf("after a second upload by the CI key: %+v", p)
	}
	// With PORTFOLIO_MANAGEMENT the tags are replaced.
	waitDone(t, dt, admin, token(t, putBOM(t, dt, admin, map[string]any{"projectName": "p", "projectVersion": "1",
		"projectTags": []map[string]string{{"name": "three"}}, "bom": bom})))
	if p = project(t, dt, "p", "1"); !slices.Equal(p.Tags, []string{"three"}) {
		t.Fatalf("tags after an upload with PORTFOLIO_MANAGEMENT: %v", p.Tags)
	}
	// Multipart: isLatest (not isLatestProjectVersion) and CSV tags at creation;
	// projectVersion may be omitted.
	waitDone(t, dt, admin, token(t, do(t, dt, http.MethodPost, "/api/v1/bom", admin, form(t, map[string]string{
		"projectName": "m", "autoCreate": "true", "isLatest": "true", "projectTags": " x , y ,,", "parentName": "b", "parentVersion": "1",
		"bom": string(bomJSON(t, vllm))}))))
	m := project(t, dt, "m", "")
	if !m.IsLatest || !slices.Equal(m.Tags, []string{"x", "y"}) || m.Parent != parentB.UUID {
		t.Fatalf("multipart-created project: %+v", m)
	}
	// Collection projects take no BOM.
	coll, _ := dt.CreateProject(dtracktest.Project{Name: "coll", Version: "1", Active: true, CollectionLogic: dtracktest.CollectionAggregateDirectChildren})
	r := putBOM(t, dt, admin, map[string]any{"project": coll.UUID, "bom": bom})
	if r.status != http.StatusBadRequest || string(r.body) != "BOM cannot be uploaded to collection project." {
		t.Fatalf("upload to a collection project: got %s", r)
	}
	r = do(t, dt, http.MethodPost, "/api/v1/bom", admin, form(t, map[string]string{"project": coll.UUID, "bom": string(bomJSON(t, vllm))}))
	if r.status != http.StatusBadRequest || string(r.body) != "BOM cannot be uploaded to collection project." {
		t.Fatalf("multipart upload to a collection project: got %s", r)
	}
}
