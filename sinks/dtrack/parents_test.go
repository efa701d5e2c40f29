package dtrack_test

// Parent projects on both lines: a parent deleted or deactivated behind
// the sink's back, collection parents, and parents retired when their last
// child goes (the children listed page by page).

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// onSuiteLineAnd50 runs f on the suite's line and, when that is not 5.0,
// on 5.0 too: the line whose wordings these recoveries were written for.
func onSuiteLineAnd50(t *testing.T, f func(t *testing.T, dt *dtracktest.Server)) {
	t.Run(line(), func(t *testing.T) { f(t, newDouble(t, dtracktest.Options{})) })
	if line() != dtracktest.Line50 {
		t.Run(dtracktest.Line50, func(t *testing.T) { f(t, newDouble(t, dtracktest.Options{Version: dtracktest.Line50})) })
	}
}

// A namespace project deleted behind the sink's back (with its children:
// delete is recursive) is re-created by the next export, whose upload
// names the cached, gone parent first: 404 "The parent project could not
// be found." on 5.x, "... component ..." on 4.x.
func TestMissingParentIsRecreated(t *testing.T) {
	onSuiteLineAnd50(t, func(t *testing.T, dt *dtracktest.Server) {
		s := newSink(t, dt, allPerms, nil)
		if err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))); err != nil {
			t.Fatal(err)
		}
		ns := mustProject(t, dt, "dev/ml")
		if r := deleteProject(t, dt, s.key, ns.UUID); r != http.StatusNoContent {
			t.Fatalf("delete the namespace project: %d", r)
		}
		w := workload("ml", "embed")
		if err := s.Export(ctx, aiBOM(t, w, 11, runtimePart("tei", "1.5"))); err != nil {
			t.Fatalf("export after the parent was deleted: %v", err)
		}
		p, again := mustProject(t, dt, projectName(w)), mustProject(t, dt, "dev/ml")
		if again.UUID == ns.UUID || p.Parent != again.UUID || again.Parent != mustProject(t, dt, "dev").UUID {
			t.Fatalf("parents not re-created: workload under %s, namespace %s under %s", p.Parent, again.UUID, again.Parent)
		}
		if n := s.logs.FilterMessage("repairing parent projects").Len(); n != 1 {
			t.Errorf("%d repairs logged, want 1", n)
		}
	})
}

// A namespace project deactivated behind the sink's back is reactivated,
// and the upload retried once: 4.x refuses the inactive parent with a 400
// problem, 5.x with a 500 "Uncaught internal server error", which is not
// an outage to retry forever with the same parent.
func TestInactiveParentIsReactivated(t *testing.T) {
	onSuiteLineAnd50(t, func(t *testing.T, dt *dtracktest.Server) {
		s := newSink(t, dt, allPerms, func(c *dtrack.Config) { c.OnTombstone = dtrack.TombstoneKeep })
		first := workload("ml", "chat")
		if err := s.Export(ctx, aiBOM(t, first, 10, runtimePart("vllm", "0.8.4"))); err != nil {
			t.Fatal(err)
		}
		// An administrator deactivates the workload project, then the
		// namespace project (which an active child would keep active).
		for _, name := range []string{projectName(first), "dev/ml"} {
			if r := patchActive(t, dt, s.key, mustProject(t, dt, name).UUID, false); r != http.StatusOK {
				t.Fatalf("deactivate %s: %d", name, r)
			}
		}
		w := workload("ml", "embed")
		b := aiBOM(t, w, 11, runtimePart("tei", "1.5"))
		if err := s.Export(ctx, b); err != nil {
			t.Fatalf("export under an inactive parent: %v", err)
		}
		ns := mustProject(t, dt, "dev/ml")
		if p := mustProject(t, dt, projectName(w)); !ns.Active || p.Parent != ns.UUID || p.BomHash != b.BomHash {
			t.Fatalf("namespace active %v; workload under %s holds %s", ns.Active, p.Parent, p.BomHash)
		}
		if got := dt.Uploads(b.BomHash); got != 1 {
			t.Errorf("%d accepted uploads, want 1", got)
		}
	})
}

// An existing project (made by hand: at the root, not latest, other tags)
// is moved under its namespace project, and its tags and latest flag set,
// with one PATCH that keeps what it does not set.
func TestExistingProjectRepairedByPatch(t *testing.T) {
	onSuiteLineAnd50(t, func(t *testing.T, dt *dtracktest.Server) {
		w := workload("ml", "chat")
		before, err := dt.CreateProject(dtracktest.Project{Name: projectName(w), Version: "current", Active: true, Tags: []string{"old"}})
		if err != nil {
			t.Fatal(err)
		}
		// A key that may upload and create, not change an existing
		// project's tags with the upload: only the PATCH can.
		perms := []string{dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement}
		s := newSink(t, dt, perms, nil)
		b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
		p := mustProject(t, dt, projectName(w))
		want := []string{"bomstream-export:10:" + strings.TrimPrefix(b.BomHash, "sha256:"), "cluster:dev", "kind:deployment", "namespace:ml", "runtime:vllm"}
		if p.Parent != mustProject(t, dt, "dev/ml").UUID || !p.IsLatest || !p.Active || strings.Join(p.Tags, ",") != strings.Join(want, ",") {
			t.Fatalf("project after export: parent %q latest %v active %v tags %v", p.Parent, p.IsLatest, p.Active, p.Tags)
		}
		if p.UUID != before.UUID || len(p.Components) != 1 {
			t.Fatalf("the project was replaced or its import lost: %+v", p)
		}
	})
}

// A refused upload to an inactive project leaves it inactive (and its
// latest flag as it was): the PATCH that takes the export tag back off
// sends both.
func TestRefusedUploadLeavesProjectAsItWas(t *testing.T) {
	onSuiteLineAnd50(t, func(t *testing.T, dt *dtracktest.Server) {
		w := workload("ml", "chat")
		if _, err := dt.CreateProject(dtracktest.Project{Name: projectName(w), Version: "current", Active: false, IsLatest: true, Tags: []string{"keep"}}); err != nil {
			t.Fatal(err)
		}
		s := newSink(t, dt, allPerms, func(c *dtrack.Config) { f := false; c.Hierarchy = &f })
		b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))
		dt.RejectBOM(b.BomHash)
		err := s.Export(ctx, b)
		if !sinks.IsPermanent(err) {
			t.Fatalf("got %v, want permanent", err)
		}
		p := mustProject(t, dt, projectName(w))
		if p.Active && line() != dtracktest.Line51 || !p.IsLatest {
			t.Fatalf("refused upload changed the project: active %v latest %v", p.Active, p.IsLatest)
		}
		for _, tag := range p.Tags {
			if strings.HasPrefix(tag, "bomstream-export:") {
				t.Fatalf("export tag of a refused BOM left on the project: %v", p.Tags)
			}
		}
	})
}

// A restarted sink (a new process: no memory of its uploads) finds on the
// project that Dependency-Track already has the BOM, and uploads nothing.
func TestRestartedSinkDoesNotUploadAgain(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	w := workload("ml", "chat")
	b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))
	if err := newSink(t, dt, allPerms, nil).Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	restarted := newSink(t, dt, allPerms, nil)
	if err := restarted.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := dt.Uploads(b.BomHash); n != 1 {
		t.Fatalf("%d uploads of one BOM across a restart", n)
	}
	if restarted.logs.FilterMessageSnippet("already uploaded (export tag)").Len() != 1 {
		t.Fatal("the restarted sink did not say why it uploaded nothing")
	}
	// A newer BOM is uploaded, and a restart before it... is uploaded once.
	b2 := aiBOM(t, w, 11, runtimePart("vllm", "0.9.0"))
	if err := restarted.Export(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if err := newSink(t, dt, allPerms, nil).Export(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if n := dt.Uploads(b2.BomHash); n != 1 || mustProject(t, dt, projectName(w)).BomHash != b2.BomHash {
		t.Fatalf("%d uploads of the newer BOM", n)
	}
}

// parents: collection makes the cluster and namespace projects collection
// projects (an existing plain one too), never sent a BOM; on 4.12, which
// has none, it is refused with the reason.
func TestCollectionParents(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { c.Parents = dtrack.ParentsCollection })
	if line() == dtracktest.Line412 {
		err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
		if !sinks.IsPermanent(err) {
			t.Fatalf("4.12 with parents: collection: %v, want permanent", err)
		}
		mustContain(t, err, "parents: collection needs collection projects, which came with Dependency-Track 4.13.0")
		if f := strings.Join(failed(s.Check(ctx)), "\n"); !strings.Contains(f, "parents: collection needs") {
			t.Fatalf("check: %s", f)
		}
		return
	}
	// An existing plain namespace project is turned into a collection.
	if _, err := dt.CreateProject(dtracktest.Project{Name: "dev", Version: "current", Active: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Export(ctx, aiBOM(t, workload("ml", fmt.Sprintf("w%d", i)), uint64(10+i), runtimePart("vllm", "0.8.4"))); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"dev", "dev/ml"} {
		p := mustProject(t, dt, name)
		if p.CollectionLogic != dtracktest.CollectionAggregateDirectChildren || p.LastBomImport != 0 || len(p.Components) != 0 || !p.Active {
			t.Errorf("%s: collection %q, lastBomImport %d, %d components, active %v", name, p.CollectionLogic, p.LastBomImport, len(p.Components), p.Active)
		}
	}
	if n := dt.Calls("PUT /api/v1/bom") + dt.Calls("POST /api/v1/bom"); n != 3 {
		t.Errorf("%d uploads for 3 workloads", n)
	}
	// With a collection tag.
	dt2 := newDouble(t, dtracktest.Options{})
	s2 := newSink(t, dt2, allPerms, func(c *dtrack.Config) {
		c.Parents, c.CollectionTag, c.Tags = dtrack.ParentsCollection, "AI-BOM", []string{"ai-bom"}
	})
	if err := s2.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	if p := mustProject(t, dt2, "dev/ml"); p.CollectionLogic != dtracktest.CollectionAggregateDirectChildrenWithTag {
		t.Errorf("with collectionTag: %q", p.CollectionLogic)
	}
}

// The last workload of a namespace of 250 goes: the sink lists the
// namespace's children across three pages (Alpine pages by 100) and keeps
// the namespace active while one child is; then retires it.
func TestNamespaceOf250ListedAcrossPages(t *testing.T) {
	onSuiteLineAnd50(t, func(t *testing.T, dt *dtracktest.Server) {
		s := newSink(t, dt, allPerms, nil)
		last := workload("ml", "w-zzz")
		first := workload("ml", "w-000")
		if err := s.Export(ctx, aiBOM(t, first, 10, runtimePart("vllm", "0.8.4"))); err != nil {
			t.Fatal(err)
		}
		ns := mustProject(t, dt, "dev/ml")
		for i := 1; i < 249; i++ {
			if _, err := dt.CreateProject(dtracktest.Project{Name: fmt.Sprintf("dev/ml/Deployment/w-%03d", i), Version: "current", Parent: ns.UUID}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Export(ctx, aiBOM(t, last, 11, runtimePart("vllm", "0.8.4"))); err != nil {
			t.Fatal(err)
		}
		if n := len(dt.Children(ns.UUID)); n != 250 {
			t.Fatalf("%d children, want 250", n)
		}
		lists := dt.Calls("GET /api/v1/project/{uuid}/children")
		if err := s.Tombstone(ctx, tombstone(first, 20)); err != nil {
			t.Fatal(err)
		}
		if got := dt.Calls("GET /api/v1/project/{uuid}/children") - lists; got != 3 {
			t.Errorf("%d pages listed to find the one active child, want 3", got)
		}
		if !mustProject(t, dt, "dev/ml").Active {
			t.Fatal("namespace deactivated while a child is active")
		}
		if err := s.Tombstone(ctx, tombstone(last, 21)); err != nil {
			t.Fatal(err)
		}
		if mustProject(t, dt, "dev/ml").Active {
			t.Fatal("namespace still active without an active child")
		}
	})
}

func deleteProject(t *testing.T, dt *dtracktest.Server, key, uuid string) int {
	t.Helper()
	return request(t, dt, http.MethodDelete, "/api/v1/project/"+uuid, key, "")
}

func patchActive(t *testing.T, dt *dtracktest.Server, key, uuid string, active bool) int {
	t.Helper()
	return request(t, dt, http.MethodPatch, "/api/v1/project/"+uuid, key, fmt.Sprintf(`{"active":%v,"isLatest":true}`, active))
}

func request(t *testing.T, dt *dtracktest.Server, method, path, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, dt.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A 4.13 or 5.0 server refuses a CycloneDX 1.7 document with its own words
// ("Unrecognized specVersion 1.7"), and the sink reports them, permanently:
// what a sink not told its specVersion would meet.
func TestRefused17IsReported(t *testing.T) {
	for _, line := range []string{dtracktest.Line413, dtracktest.Line50} {
		dt := newDouble(t, dtracktest.Options{Version: line})
		s := newSink(t, dt, allPerms, nil)
		b := aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))
		b.Body = []byte(strings.Replace(string(b.Body), `"specVersion":"1.6"`, `"specVersion":"1.7"`, 1))
		b.BomHash = schemas.BomHash(b.Body)
		err := s.Export(ctx, b)
		if !sinks.IsPermanent(err) {
			t.Fatalf("%s: %v, want permanent", line, err)
		}
		mustContain(t, err, "The uploaded BOM is invalid: Unrecognized specVersion 1.7")
	}
}
