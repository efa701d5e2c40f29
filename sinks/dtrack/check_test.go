package dtrack_test

import (
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

var _ sinks.Checker = (*dtrack.Sink)(nil)

// failed returns the failed checks as "name: error".
func failed(checks []sinks.Check) []string {
	var out []string
	for _, c := range checks {
		if c.Err != nil {
			out = append(out, c.Name+": "+c.Err.Error())
		}
	}
	return out
}

func TestCheckPassesWithEveryPermission(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	checks := s.Check(ctx)
	if f := failed(checks); len(f) > 0 {
		t.Fatalf("failed checks: %q", f)
	}
	if len(checks) < 5 {
		t.Fatalf("only %d checks", len(checks))
	}
	if dt.Calls("PUT /api/v1/bom")+dt.Calls("PUT /api/v1/project")+dt.Calls("PATCH /api/v1/project/{uuid}") != 0 {
		t.Fatal("Check wrote something")
	}
	// PORTFOLIO_MANAGEMENT also covers project creation.
	s = newSink(t, dt, []string{dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagement}, nil)
	if f := failed(s.Check(ctx)); len(f) > 0 {
		t.Fatalf("failed checks: %q", f)
	}
}

func TestCheckNamesTheMissingPermission(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	for _, c := range []struct {
		perms       []string
		edit        func(*dtrack.Config)
		want, want5 []string // on 4.x, on 5.x
	}{
		{[]string{dtracktest.ViewPortfolio, dtracktest.PortfolioManagement}, nil,
			[]string{"lacks BOM_UPLOAD, needed to upload BOMs: grant BOM_UPLOAD"}, nil},
		{[]string{dtracktest.BOMUpload, dtracktest.ProjectCreationUpload, dtracktest.ViewPortfolio}, nil,
			[]string{"lacks PORTFOLIO_MANAGEMENT, needed to create the cluster and namespace projects, deactivate the projects of deleted workloads"},
			[]string{"lacks PORTFOLIO_MANAGEMENT or PORTFOLIO_MANAGEMENT_CREATE, needed to create the cluster and namespace projects",
				"lacks PORTFOLIO_MANAGEMENT or PORTFOLIO_MANAGEMENT_UPDATE, needed to deactivate the projects of deleted workloads"}},
		{[]string{dtracktest.BOMUpload, dtracktest.ViewPortfolio}, func(c *dtrack.Config) { f := false; c.Hierarchy = &f; c.OnTombstone = dtrack.TombstoneDelete },
			[]string{"needed to delete the projects of deleted workloads", "lacks PROJECT_CREATION_UPLOAD or PORTFOLIO_MANAGEMENT, needed to create workload projects on upload (autoCreate)"},
			[]string{"lacks PORTFOLIO_MANAGEMENT or PORTFOLIO_MANAGEMENT_DELETE, needed to delete the projects of deleted workloads",
				"lacks PROJECT_CREATION_UPLOAD or PORTFOLIO_MANAGEMENT or PORTFOLIO_MANAGEMENT_CREATE, needed to create workload projects on upload (autoCreate)"}},
		{[]string{dtracktest.BOMUpload, dtracktest.PortfolioManagement}, nil,
			[]string{"lacks VIEW_PORTFOLIO"}, nil},
	} {
		s := newSink(t, dt, c.perms, c.edit)
		f := strings.Join(failed(s.Check(ctx)), "\n")
		if isV5() && c.want5 != nil {
			c.want = c.want5
		}
		for _, want := range c.want {
			if !strings.Contains(f, want) {
				t.Errorf("key with %v: failed checks\n%s\ndo not say %q", c.perms, f, want)
			}
		}
		if !strings.Contains(f, `team "bomstream"`) || !strings.Contains(f, "Administration > Access Management > Teams") {
			t.Errorf("failed checks do not say where to grant: %s", f)
		}
		s.assertNoKey(t)
	}
}

func TestCheckBadKeyDownAndOldServers(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	s := newSink(t, dt, allPerms, nil)
	dt.RevokeKey(s.key)
	f := strings.Join(failed(s.Check(ctx)), "\n")
	if !strings.Contains(f, "API key valid: ") || !strings.Contains(f, "401") {
		t.Fatalf("revoked key: %s", f)
	}
	for _, c := range s.Check(ctx) {
		if c.Err != nil && strings.Contains(c.Err.Error(), s.key) {
			t.Fatal("a check carries the key")
		}
	}

	dt.Down(0)
	checks := s.Check(ctx)
	if len(checks) != 1 || checks[0].Err == nil || !strings.Contains(checks[0].Err.Error(), "503") {
		t.Fatalf("server down: %v", failed(checks))
	}
	dt.Up()

	old := newDouble(t, dtracktest.Options{Version: "4.11.7"})
	f = strings.Join(failed(newSink(t, old, allPerms, nil).Check(ctx)), "\n")
	if !strings.Contains(f, "older than 4.12.0") {
		t.Fatalf("old server: %s", f)
	}
}

// The check names the server's version and the features the sink uses, and
// on 5.x a key holding only the fine-grained portfolio permissions passes.
func TestCheckNamesVersionFeaturesAndFineGrainedPermissions(t *testing.T) {
	dt := newDouble(t, dtracktest.Options{})
	fine := []string{dtracktest.BOMUpload, dtracktest.ViewPortfolio, dtracktest.PortfolioManagementCreate, dtracktest.PortfolioManagementUpdate, dtracktest.PortfolioManagementDelete}
	s := newSink(t, dt, fine, func(c *dtrack.Config) { c.OnTombstone = dtrack.TombstoneDelete })
	checks := s.Check(ctx)
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{"Dependency-Track version " + line() + " supported", "features in use: ", "CycloneDX 1.6", "parents plain", "export tag bomstream-export:"} {
		if !strings.Contains(all, want) {
			t.Errorf("checks do not say %q:\n%s", want, all)
		}
	}
	if gz := strings.Contains(all, "gzip above 65536 bytes"); gz != (line() == dtracktest.Line51) {
		t.Errorf("checks name gzip uploads: %v on %s:\n%s", gz, line(), all)
	}
	f := failed(checks)
	switch {
	case isV5() && len(f) > 0:
		t.Errorf("5.x: a key with the fine-grained permissions fails: %q", f)
	case !isV5() && !strings.Contains(strings.Join(f, "\n"), "lacks PORTFOLIO_MANAGEMENT,"):
		t.Errorf("4.x: a key with only the fine-grained permissions passes: %q", f)
	}
}
