package dtrack_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

var ctx = context.Background()

// inspect reports what the double holds for w's project.
func inspect(dt *dtracktest.Server) func(t *testing.T, s sinks.Sink, w schemas.Workload) sinktest.Stored {
	return func(t *testing.T, _ sinks.Sink, w schemas.Workload) sinktest.Stored {
		p, ok := dt.Project(projectName(w), "current")
		if !ok || p.BomHash == "" {
			return sinktest.Stored{}
		}
		return sinktest.Stored{BOMs: 1, Latest: p.BomHash, Tombstoned: !p.Active}
	}
}

// invalid are BOMs Dependency-Track (or the sink) rejects for good.
func invalid(t *testing.T) []sinks.BOM {
	badType := aiBOM(t, workload("ml", "bad-type"), 1, part{Type: "gadget", Name: "x"})
	v17 := sinktest.NewBOM(sinktest.Workload("v17"), 1)
	v17.Body = []byte(strings.Replace(string(v17.Body), `"specVersion":"1.6"`, `"specVersion":"1.7"`, 1))
	v17.BomHash = schemas.BomHash(v17.Body)
	noName := sinktest.NewBOM(schemas.Workload{Cluster: "dev", Namespace: "ml", Kind: "Deployment"}, 1)
	if takes17(line()) {
		return []sinks.BOM{badType, noName}
	}
	return []sinks.BOM{badType, v17, noName}
}

// takes17 reports whether a line accepts CycloneDX 1.7 (4.14.4, 5.1).
func takes17(line string) bool {
	return line == dtracktest.Line414 || line == dtracktest.Line51
}

// isV5 reports whether the suite's line is 5.x.
func isV5() bool { return strings.HasPrefix(line(), "5.") }

// options are the conformance suite's options for a sink on dt.
func options(t *testing.T, dt *dtracktest.Server) sinktest.Options {
	return sinktest.Options{
		Inspect: inspect(dt), Invalid: invalid(t),
		// A project holds the components of its last upload only.
		LatestOnly: true,
		Outage: func(_ *testing.T, _ sinks.Sink, down bool) {
			if down {
				dt.Down(0)
			} else {
				dt.Up()
			}
		},
		Type:   dtrack.SinkType,
		Config: map[string]any{"url": dt.URL(), "apiKeyEnv": "DT_API_KEY"},
	}
}

// TestSinktest runs the conformance suite: deactivating tombstones (the
// default) and deleting ones.
func TestSinktest(t *testing.T) {
	t.Run("deactivate", func(t *testing.T) {
		dt := newDouble(t, dtracktest.Options{})
		opts := options(t, dt)
		opts.InvalidTombstones = []sinks.Tombstone{tombstone(schemas.Workload{Cluster: "dev", Kind: "Deployment"}, 1)}
		sinktest.Run(t, func(t *testing.T) sinks.Sink { return newSink(t, dt, allPerms, nil).Sink }, opts)
	})
	t.Run("delete", func(t *testing.T) {
		dt := newDouble(t, dtracktest.Options{})
		edit := func(c *dtrack.Config) { c.OnTombstone = dtrack.TombstoneDelete }
		opts := options(t, dt)
		opts.TombstoneRemoves = true
		sinktest.Run(t, func(t *testing.T) sinks.Sink { return newSink(t, dt, allPerms, edit).Sink }, opts)
	})
}

func TestSinkTypeIsLatestOnly(t *testing.T) {
	if !dtrack.SinkType.LatestOnly {
		t.Fatal("SinkType.LatestOnly is false")
	}
}

// The workload's project is created under a namespace project under a
// cluster project, each tagged; its components are the BOM's. The double
// imports each BOM 20 ms late, as a busy machine does.
func TestExportCreatesProjectsAndHierarchy(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{ProcessingDelay: 20 * time.Millisecond})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { c.Tags = []string{"Team:ML"} })
	w := workload("ml", "chat")
	b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"), model("meta-llama/Llama-3.1-8B-Instruct", "0e9e39f"), image("docker.io/vllm/vllm-openai", "v0.8.4"))
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	cluster := mustProject(t, dt, "dev")
	ns := mustProject(t, dt, "dev/ml")
	p := mustProject(t, dt, "dev/ml/Deployment/chat")
	if cluster.Parent != "" || ns.Parent != cluster.UUID || p.Parent != ns.UUID {
		t.Fatalf("hierarchy: cluster %s (parent %q), namespace %s (parent %q), workload parent %q", cluster.UUID, cluster.Parent, ns.UUID, ns.Parent, p.Parent)
	}
	if want := []string{"cluster:dev"}; !slices.Equal(cluster.Tags, want) {
		t.Errorf("cluster tags %v, want %v", cluster.Tags, want)
	}
	if want := []string{"cluster:dev", "namespace:ml"}; !slices.Equal(ns.Tags, want) {
		t.Errorf("namespace tags %v, want %v", ns.Tags, want)
	}
	if want := []string{"bomstream-export:10:" + strings.TrimPrefix(b.BomHash, "sha256:"), "cluster:dev", "kind:deployment", "namespace:ml", "runtime:vllm", "team:ml"}; !slices.Equal(p.Tags, want) {
		t.Errorf("workload tags %v, want %v", p.Tags, want)
	}
	if !p.Active || !p.IsLatest || p.BomHash != b.BomHash || p.LastBomImportFormat != "CycloneDX 1.6" {
		t.Errorf("workload project: %+v", p)
	}
	assertComponents(t, p, b)
	if n := len(dt.Projects()); n != 3 {
		t.Errorf("%d projects, want 3: %v", n, projectNames(dt))
	}

	// A second workload in the same namespace reuses the parents (cached:
	// not looked up again, not created again), one in another namespace
	// gets its own. Only the parents' lookups are counted: the workload's
	// own project is looked up once more for every poll of its import,
	// as many as the import takes (the double's ProcessingDelay makes it
	// several, as a busy machine did).
	parentLookups := func() int { return dt.Lookups("dev", "current") + dt.Lookups("dev/ml", "current") }
	before, creations := parentLookups(), dt.Calls("PUT /api/v1/project")
	if err := s.Export(ctx, aiBOM(t, workload("ml", "embed"), 11, runtimePart("tei", "1.5"))); err != nil {
		t.Fatal(err)
	}
	if got := parentLookups() - before; got != 0 {
		t.Errorf("%d lookups of the cached parents for a second workload of a known namespace", got)
	}
	if got := dt.Calls("PUT /api/v1/project") - creations; got != 0 {
		t.Errorf("%d project creations for a second workload of a known namespace", got)
	}
	if dt.Lookups("dev/ml/Deployment/embed", "current") == 0 {
		t.Errorf("the second workload's project was never looked up")
	}
	if err := s.Export(ctx, aiBOM(t, workload("search", "rank"), 12, runtimePart("triton", "24.05"))); err != nil {
		t.Fatal(err)
	}
	if got := mustProject(t, dt, "dev/search"); got.Parent != cluster.UUID {
		t.Errorf("dev/search parent %q, want the cluster project", got.Parent)
	}
	if got := mustProject(t, dt, "dev/ml/Deployment/embed"); got.Parent != ns.UUID {
		t.Errorf("embed parent %q", got.Parent)
	}
	if n := dt.Calls("PUT /api/v1/project"); n != 3 {
		t.Errorf("%d project creations, want 3 (dev, dev/ml, dev/search)", n)
	}
	s.assertNoKey(t)
}

// assertComponents checks that p holds exactly the BOM's components.
func assertComponents(t *testing.T, p dtracktest.Project, b sinks.BOM) {
	t.Helper()
	var bom struct {
		Components []struct{ Type, Name, Version, Purl string }
	}
	if err := json.Unmarshal(b.Body, &bom); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, c := range bom.Components {
		want = append(want, strings.ReplaceAll(c.Type, "-", "_")+" "+c.Name+" "+c.Version+" "+c.Purl)
	}
	for _, c := range p.Components {
		got = append(got, strings.ToLower(c.Classifier)+" "+c.Name+" "+c.Version+" "+c.Purl)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("components:\n got %q\nwant %q", got, want)
	}
}

func TestSecondVersionReplacesTheFirst(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	w := workload("ml", "chat")
	llama := model("meta-llama/Llama-3.1-8B-Instruct", "0e9e39f")
	v1 := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"), llama)
	v2 := aiBOM(t, w, 20, runtimePart("sglang", "0.4.6"), llama)
	for _, b := range []sinks.BOM{v1, v2} {
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	p := mustProject(t, dt, projectName(w))
	assertComponents(t, p, v2)
	if p.BomHash != v2.BomHash || !slices.Contains(p.Tags, "runtime:sglang") || slices.Contains(p.Tags, "runtime:vllm") {
		t.Fatalf("project after v2: %+v", p)
	}
	if dt.Processed(v1.BomHash) != 1 || dt.Processed(v2.BomHash) != 1 {
		t.Fatalf("imports: v1 %d, v2 %d", dt.Processed(v1.BomHash), dt.Processed(v2.BomHash))
	}
	// Exporting v2 again changes nothing and uploads nothing.
	puts := dt.Calls("PUT /api/v1/bom")
	if err := s.Export(ctx, v2); err != nil {
		t.Fatal(err)
	}
	if dt.Calls("PUT /api/v1/bom") != puts {
		t.Fatal("re-export of the imported BOM uploaded it again")
	}
}

func TestTombstoneDeactivatesAndANewBOMReactivates(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	w := workload("ml", "chat")
	b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	before := mustProject(t, dt, projectName(w))
	ts := tombstone(w, 20)
	ts.Reason = sinks.ReasonNotServing
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	p := mustProject(t, dt, projectName(w))
	if p.Active {
		t.Fatal("project still active after the tombstone")
	}
	// The PATCH sent isLatest: the flag survived; the BOM and tags stayed.
	if !p.IsLatest || p.BomHash != b.BomHash || !slices.Equal(p.Tags, before.Tags) || len(p.Components) != len(before.Components) {
		t.Fatalf("tombstone changed more than active: %+v -> %+v", before, p)
	}
	// Idempotent: nothing more is sent.
	patches := dt.Calls("PATCH /api/v1/project/{uuid}")
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if dt.Calls("PATCH /api/v1/project/{uuid}") != patches {
		t.Fatal("a second tombstone patched again")
	}
	// Its last active child gone, the namespace project is deactivated,
	// and so is the cluster project.
	if mustProject(t, dt, "dev/ml").Active || mustProject(t, dt, "dev").Active {
		t.Fatal("namespace or cluster project still active without an active child")
	}
	b2 := aiBOM(t, w, 30, runtimePart("vllm", "0.9.0"))
	if err := s.Export(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if p := mustProject(t, dt, projectName(w)); !p.Active || !p.IsLatest || p.BomHash != b2.BomHash {
		t.Fatalf("after a new BOM: %+v", p)
	}
	if !mustProject(t, dt, "dev/ml").Active || !mustProject(t, dt, "dev").Active {
		t.Fatal("parents not reactivated by a new BOM under them")
	}
	// A parent with an active child is never deactivated.
	other := workload("ml", "other")
	if err := s.Export(ctx, aiBOM(t, other, 40, runtimePart("sglang", "0.4.6"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Tombstone(ctx, tombstone(w, 50)); err != nil {
		t.Fatal(err)
	}
	if !mustProject(t, dt, "dev/ml").Active || !mustProject(t, dt, "dev").Active {
		t.Fatal("a parent with an active child was deactivated")
	}
}

// When the reactivation fails after the import, the retry only reactivates:
// it does not upload the BOM again.
func TestFailedReactivationIsRetriedWithoutAnotherUpload(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	w := workload("ml", "chat")
	if err := s.Export(ctx, aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	// A sibling keeps the namespace project active.
	if err := s.Export(ctx, aiBOM(t, workload("ml", "sibling"), 11, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Tombstone(ctx, tombstone(w, 20)); err != nil {
		t.Fatal(err)
	}
	dt.SetPermissions(s.key, dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.ProjectCreationUpload)
	b := aiBOM(t, w, 30, runtimePart("vllm", "0.9.0"))
	patches := dt.Calls("PATCH /api/v1/project/{uuid}")
	err := s.Export(ctx, b)
	if line() == dtracktest.Line51 {
		// 5.1 reactivates with the upload's isActive; the PATCH of the
		// tags the key may not change is refused, and only warned about.
		if err != nil || !mustProject(t, dt, projectName(w)).Active || dt.Calls("PATCH /api/v1/project/{uuid}") != patches+1 ||
			s.logs.FilterMessageSnippet("tags or latest flag of an existing project not updated").Len() != 1 {
			t.Fatalf("5.1: %v; want the upload to reactivate the project, and one refused PATCH of its tags, warned about", err)
		}
		return
	}
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	mustContain(t, err, "lacks the PORTFOLIO_MANAGEMENT permission")
	dt.SetPermissions(s.key, allPerms...)
	puts := dt.Calls("PUT /api/v1/bom")
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	if dt.Calls("PUT /api/v1/bom") != puts || dt.Processed(b.BomHash) != 1 {
		t.Fatalf("uploaded again: %d puts after, %d before; %d imports", dt.Calls("PUT /api/v1/bom"), puts, dt.Processed(b.BomHash))
	}
	if p := mustProject(t, dt, projectName(w)); !p.Active || p.BomHash != b.BomHash {
		t.Fatalf("project: %+v", p)
	}
}

func TestTombstoneModes(t *testing.T) {
	for _, mode := range []string{dtrack.TombstoneDelete, dtrack.TombstoneKeep} {
		t.Run(mode, func(t *testing.T) {
			dt := newDouble(t, dtracktest.Options{})
			s := newSink(t, dt, allPerms, func(c *dtrack.Config) { c.OnTombstone = mode })
			w := workload("ml", "chat")
			if err := s.Export(ctx, aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))); err != nil {
				t.Fatal(err)
			}
			if err := s.Tombstone(ctx, tombstone(w, 20)); err != nil {
				t.Fatal(err)
			}
			p, ok := dt.Project(projectName(w), "current")
			switch mode {
			case dtrack.TombstoneDelete:
				if ok {
					t.Fatal("project not deleted")
				}
				if _, ok := dt.Project("dev/ml", "current"); !ok {
					t.Fatal("the namespace project went too")
				}
			case dtrack.TombstoneKeep:
				if !ok || !p.Active {
					t.Fatalf("project not kept active: %+v", p)
				}
			}
			// A tombstone of a workload never exported is a no-op.
			if err := s.Tombstone(ctx, tombstone(workload("ml", "nginx"), 21)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// With a project per uid (a template naming .UID), the runner's order
// flags, which are about names, are not about the project: the late
// tombstone of a workload deleted and re-created under its name
// deactivates the old workload's project.
func TestProjectPerUIDIgnoresNameOrder(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { c.ProjectVersion = "{{.UID}}" })
	old, recreated := workload("ml", "chat"), workload("ml", "chat")
	recreated.UID = "uid-new"
	for _, b := range []sinks.BOM{aiBOM(t, old, 10, runtimePart("vllm", "0.8.4")), aiBOM(t, recreated, 30, runtimePart("vllm", "0.8.4"))} {
		if err := s.Export(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	ts := tombstone(old, 20)
	ts.Stale = true // the runner applied change 30 of the name first
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if p, ok := dt.Project(projectName(old), old.UID); !ok || p.Active {
		t.Fatalf("the old workload's project: %+v (found %v), want it deactivated", p, ok)
	}
	if p, ok := dt.Project(projectName(recreated), recreated.UID); !ok || !p.Active {
		t.Fatalf("the re-created workload's project: %+v (found %v), want it active", p, ok)
	}
}

func TestTemplates(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) {
		c.ProjectName = "ai/{{.Namespace}}/{{.Name}}"
		c.ProjectVersion = "{{.Cluster}}"
		c.ClusterProject = "k8s-{{.Cluster}}"
		c.NamespaceProject = "k8s-{{.Cluster}}-{{.Namespace}}"
		c.ParentVersion = "v1"
	})
	if err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	cl, ok1 := dt.Project("k8s-dev", "v1")
	ns, ok2 := dt.Project("k8s-dev-ml", "v1")
	p, ok3 := dt.Project("ai/ml/chat", "dev")
	if !ok1 || !ok2 || !ok3 || ns.Parent != cl.UUID || p.Parent != ns.UUID {
		t.Fatalf("templated projects: %v", projectNames(dt))
	}
}

func TestHierarchyOff(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { f := false; c.Hierarchy = &f })
	w := workload("ml", "chat")
	if err := s.Export(ctx, aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	if p := mustProject(t, dt, projectName(w)); p.Parent != "" || len(dt.Projects()) != 1 {
		t.Fatalf("projects %v, parent %q", projectNames(dt), p.Parent)
	}
}

// An existing project outside the hierarchy is moved under its namespace.
func TestExistingProjectIsMovedUnderItsParent(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	w := workload("ml", "chat")
	if _, err := dt.CreateProject(dtracktest.Project{Name: projectName(w), Version: "current", Active: true}); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, dt, allPerms, nil)
	if err := s.Export(ctx, aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	if p := mustProject(t, dt, projectName(w)); p.Parent != mustProject(t, dt, "dev/ml").UUID || !p.Active {
		t.Fatalf("project: %+v", p)
	}
}

func TestClusterScopedWorkloadGoesUnderTheCluster(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	w := schemas.Workload{Cluster: "dev", APIVersion: "serving.kserve.io/v1alpha1", Kind: "ClusterServingRuntime", Name: "vllm", UID: "u1"}
	if err := s.Export(ctx, aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	p := mustProject(t, dt, "dev//ClusterServingRuntime/vllm")
	if p.Parent != mustProject(t, dt, "dev").UUID || slices.ContainsFunc(p.Tags, func(s string) bool { return strings.HasPrefix(s, "namespace:") }) {
		t.Fatalf("cluster-scoped project: %+v", p)
	}
}

// A key that may upload but not create projects gets a permanent error that
// names the permission to grant, and nothing is created.
func TestKeyWithoutProjectCreationPermission(t *testing.T) {
	t.Run("hierarchy off: the upload is refused", func(t *testing.T) {
		dt := newDouble(t, dtracktest.Options{})
		s := newSink(t, dt, []string{dtracktest.BOMUpload, dtracktest.ViewPortfolio}, func(c *dtrack.Config) { f := false; c.Hierarchy = &f })
		err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
		if !sinks.IsPermanent(err) {
			t.Fatalf("got %v, want a permanent error", err)
		}
		for _, want := range []string{"may not create projects", dtrack.PermProjectCreationUpload, dtrack.PermPortfolioManagement, "autoCreate: false"} {
			mustContain(t, err, want)
		}
		if len(dt.Projects()) != 0 {
			t.Fatalf("projects created: %v", projectNames(dt))
		}
		s.assertNoKey(t, err)
	})
	t.Run("hierarchy on: the parent cannot be created", func(t *testing.T) {
		dt := newDouble(t, dtracktest.Options{})
		s := newSink(t, dt, []string{dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.ProjectCreationUpload}, nil)
		err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
		if !sinks.IsPermanent(err) {
			t.Fatalf("got %v, want a permanent error", err)
		}
		mustContain(t, err, `create project "dev"`)
		mustContain(t, err, "lacks the PORTFOLIO_MANAGEMENT permission")
		s.assertNoKey(t, err)
	})
}

func TestMissingPermissionsAndBadKeysArePermanent(t *testing.T) {
	for name, c := range map[string]struct {
		perms []string
		want  string
	}{
		"no BOM_UPLOAD":     {[]string{dtracktest.ViewPortfolio, dtracktest.PortfolioManagement}, "lacks the BOM_UPLOAD permission (403 Forbidden): grant BOM_UPLOAD"},
		"no VIEW_PORTFOLIO": {[]string{dtracktest.BOMUpload, dtracktest.PortfolioManagement}, "lacks the VIEW_PORTFOLIO permission (403 Forbidden): grant VIEW_PORTFOLIO"},
	} {
		t.Run(name, func(t *testing.T) {
			dt := newDouble(t, dtracktest.Options{})
			s := newSink(t, dt, c.perms, nil)
			err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
			if !sinks.IsPermanent(err) {
				t.Fatalf("got %v, want permanent", err)
			}
			mustContain(t, err, c.want)
			s.assertNoKey(t, err)
		})
	}
	t.Run("revoked key", func(t *testing.T) {
		dt := newDouble(t, dtracktest.Options{})
		s := newSink(t, dt, allPerms, nil)
		dt.RevokeKey(s.key)
		err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
		if !sinks.IsPermanent(err) {
			t.Fatalf("got %v, want permanent", err)
		}
		mustContain(t, err, "refused the API key (401 Unauthorized)")
		s.assertNoKey(t, err)
	})
}

func TestAutoCreateOffAndNoProjectIsPermanent(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { f := false; c.AutoCreate = &f })
	err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	mustContain(t, err, "does not exist and autoCreate is off")
	// Once the project exists, the same BOM goes in.
	ns := mustProject(t, dt, "dev/ml")
	if _, err := dt.CreateProject(dtracktest.Project{Name: "dev/ml/Deployment/chat", Version: "current", Active: true, Parent: ns.UUID}); err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
}

// A BOM whose base64 form is over the PUT limit goes as multipart.
func TestBOMOverThePutLimitGoesMultipart(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	w := workload("ml", "huge")
	padded := runtimePart("vllm", "0.8.4")
	padded.Note = strings.Repeat("n", dtrack.PutLimit*3/4+1)
	models := []part{padded, model("meta-llama/Llama-3.1-8B-Instruct", "0e9e39f")}
	b := aiBOM(t, w, 10, models...)
	if n := base64.StdEncoding.EncodedLen(len(b.Body)); n <= dtrack.PutLimit {
		t.Fatalf("test BOM is %d bytes, %d in base64: not over the limit", len(b.Body), n)
	}
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	if dt.Calls("POST /api/v1/bom") != 1 || dt.Calls("PUT /api/v1/bom") != 0 {
		t.Fatalf("calls: %v", dt.AllCalls())
	}
	p := mustProject(t, dt, projectName(w))
	if p.BomHash != b.BomHash || len(p.Components) != len(models) || !slices.Contains(p.Tags, "runtime:vllm") {
		t.Fatalf("project after the multipart upload: hash %s, %d components, tags %v", p.BomHash, len(p.Components), p.Tags)
	}
	// A small one goes with PUT.
	if err := s.Export(ctx, aiBOM(t, workload("ml", "small"), 11, runtimePart("vllm", "0.8.4"))); err != nil {
		t.Fatal(err)
	}
	if dt.Calls("PUT /api/v1/bom") != 1 {
		t.Fatalf("calls: %v", dt.AllCalls())
	}
}

// A BOM the server rejects is a permanent error carrying the server's
// reasons; once the server accepts it, the same export succeeds.
func TestRejectedBOMIsPermanentWithTheServersReason(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	w := workload("ml", "chat")
	b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))
	dt.RejectBOM(b.BomHash, "$.components[0].licenses: must be an array", "$.metadata.tools: is deprecated")
	err := s.Export(ctx, b)
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	for _, want := range []string{"400 Bad Request", "The uploaded BOM is invalid: Schema validation failed",
		"$.components[0].licenses: must be an array; $.metadata.tools: is deprecated"} {
		mustContain(t, err, want)
	}
	dt.AcceptBOM(b.BomHash)
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	if mustProject(t, dt, projectName(w)).BomHash != b.BomHash {
		t.Fatal("not imported after AcceptBOM")
	}

	// A real schema failure carries the validator's own path.
	err = s.Export(ctx, aiBOM(t, workload("ml", "odd"), 11, part{Type: "gadget", Name: "x"}))
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	mustContain(t, err, "$.components[0].type")
	s.assertNoKey(t, err)
}

// A BOM that passes validation but fails processing (a component type
// Dependency-Track lacks) is permanent: retrying the bytes cannot help. 5.x
// imports cryptographic-asset components.
func TestProcessingFailureIsPermanent(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{ProcessingDelay: 20 * time.Millisecond})
	s := newSink(t, dt, allPerms, nil)
	b := aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"), part{Type: "cryptographic-asset", Name: "aes"})
	err := s.Export(ctx, b)
	if isV5() {
		if err != nil || dt.Processed(b.BomHash) != 1 {
			t.Fatalf("5.x: %v, %d imports; want the BOM imported", err, dt.Processed(b.BomHash))
		}
		return
	}
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	mustContain(t, err, "did not import it")
	if dt.FailedProcessing(b.BomHash) != 1 {
		t.Fatal("the double did not fail it")
	}
}

func TestCollectionProjectIsPermanent(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	w := workload("ml", "chat")
	if _, err := dt.CreateProject(dtracktest.Project{Name: projectName(w), Version: "current", Active: true, CollectionLogic: dtracktest.CollectionAggregateDirectChildren}); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { f := false; c.Hierarchy = &f })
	err := s.Export(ctx, aiBOM(t, w, 10, runtimePart("vllm", "0.8.4")))
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	if isV5() {
		mustContain(t, err, "BOM cannot be uploaded to a collection project.")
	} else {
		mustContain(t, err, "BOM cannot be uploaded to collection project.")
	}
	mustContain(t, err, "is a collection project, which takes no BOM")
}

// 5xx and connection errors are transient, from the first call on (the
// sink connects lazily), and carry no key.
func TestOutagesAndConnectionErrorsAreTransient(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	b := aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))
	dt.Down(0)
	err := s.Export(ctx, b) // the first call: /api/version answers 503
	if err == nil || sinks.IsPermanent(err) {
		t.Fatalf("during an outage: got %v, want a transient error", err)
	}
	mustContain(t, err, "503 Service Unavailable")
	dt.Up()
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	dt.Close()
	err = s.Export(ctx, aiBOM(t, workload("ml", "other"), 11, runtimePart("vllm", "0.8.4")))
	if err == nil || sinks.IsPermanent(err) {
		t.Fatalf("server gone: got %v, want a transient error", err)
	}
	s.assertNoKey(t, err)
}

// An outage while the sink waits for the import does not make it upload
// the BOM twice: the wait goes on through errors, and when it times out the
// retry resumes it.
func TestOutageWhileWaitingDoesNotUploadTwice(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{ProcessingDelay: 300 * time.Millisecond})
	s := newSink(t, dt, allPerms, func(c *dtrack.Config) { c.ProcessingTimeout = 200 * time.Millisecond })
	w := workload("ml", "chat")
	// Connect and create the parents; this import too outlasts the timeout,
	// and the retries resume it.
	if err := exportEventually(t, s, aiBOM(t, w, 5, runtimePart("vllm", "0.8.3"))); err != nil {
		t.Fatal(err)
	}
	b := aiBOM(t, w, 10, runtimePart("vllm", "0.8.4"))
	go func() {
		// The upload is in; the API goes down while the sink polls.
		deadline := time.Now().Add(time.Minute) // else the test fails on its own
		for dt.Calls("PUT /api/v1/bom") < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		dt.Down(400 * time.Millisecond)
	}()
	err := s.Export(ctx, b)
	if err == nil || sinks.IsPermanent(err) {
		t.Fatalf("got %v, want a transient timeout", err)
	}
	mustContain(t, err, "not imported within processingTimeout")
	if err := exportEventually(t, s, b); err != nil {
		t.Fatal(err)
	}
	if n := dt.Calls("PUT /api/v1/bom"); n != 2 {
		t.Fatalf("%d uploads, want 2 (one per BOM)", n)
	}
	if dt.Processed(b.BomHash) != 1 {
		t.Fatalf("processed %d times", dt.Processed(b.BomHash))
	}
}

// A canceled wait leaves the token for the next Export to resume. The
// cancel comes once the sink polls the token (the upload is answered): a
// cancel during the upload itself may lose the token, and a second upload
// is then right.
func TestCanceledWaitResumes(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{ProcessingDelay: 200 * time.Millisecond})
	s := newSink(t, dt, allPerms, nil)
	b := aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4"))
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		deadline := time.Now().Add(time.Minute) // else the test fails on its own
		for dt.Calls("GET /api/v1/event/token/{uuid}")+dt.Calls("GET /api/v1/bom/token/{uuid}") < 1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := s.Export(cctx, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := s.Export(ctx, b); err != nil {
		t.Fatal(err)
	}
	if dt.Calls("PUT /api/v1/bom") != 1 || dt.Processed(b.BomHash) != 1 {
		t.Fatalf("uploads %d, imports %d", dt.Calls("PUT /api/v1/bom"), dt.Processed(b.BomHash))
	}
}

func TestOldServerIsPermanent(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{Version: "4.11.7"})
	s := newSink(t, dt, allPerms, nil)
	err := s.Export(ctx, aiBOM(t, workload("ml", "chat"), 10, runtimePart("vllm", "0.8.4")))
	if !sinks.IsPermanent(err) {
		t.Fatalf("got %v, want permanent", err)
	}
	mustContain(t, err, "older than 4.12.0")
}

// exportEventually retries transient errors, as the runner would.
func exportEventually(t testing.TB, s testSink, b sinks.BOM) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := s.Export(ctx, b)
		if err == nil || sinks.IsPermanent(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustContain(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v does not contain %q", err, want)
	}
}
