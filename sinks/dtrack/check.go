package dtrack

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/bomstream/bomstream/sinks"
)

// need is a permission the configuration needs, with what for.
type need struct {
	perms []string // any one of them will do
	what  string
}

// needs lists the permissions the configured features need.
func (s *Sink) needs() []need {
	out := []need{
		{[]string{PermBOMUpload}, "upload BOMs"},
		{[]string{PermViewPortfolio}, "look projects up and confirm each import"},
	}
	var pm []string
	if s.cfg.hierarchy() {
		pm = append(pm, "create the cluster and namespace projects")
	}
	switch s.cfg.OnTombstone {
	case TombstoneDeactivate:
		pm = append(pm, "deactivate the projects of deleted workloads and reactivate them when they come back")
	case TombstoneDelete:
		pm = append(pm, "delete the projects of deleted workloads")
	}
	pm = append(pm, "keep the tags of existing projects current")
	out = append(out, need{[]string{PermPortfolioManagement}, strings.Join(pm, ", ")})
	if s.cfg.autoCreate() {
		out = append(out, need{[]string{PermProjectCreationUpload, PermPortfolioManagement}, "create workload projects on upload (autoCreate)"})
	}
	return out
}

// Check implements sinks.Checker: the API server answers GET /api/version
// with a supported version, the API key is valid (GET /api/v1/team/self,
// which needs no permission and lists the key's team's permissions), and
// the team holds each permission the configuration needs. It writes nothing.
func (s *Sink) Check(ctx context.Context) []sinks.Check {
	var out []sinks.Check
	v, err := s.serverVersion(ctx)
	out = append(out, sinks.Check{Name: "Dependency-Track reachable at " + s.cfg.URL, Err: err})
	if err != nil {
		return out
	}
	var verr error
	if !versionAtLeast(v, MinVersion) {
		verr = fmt.Errorf("Dependency-Track %s is older than %s, the oldest version this sink supports: upgrade it", v, MinVersion)
	}
	out = append(out, sinks.Check{Name: "Dependency-Track version " + v + " supported", Err: verr})

	var self struct {
		Name        string `json:"name"`
		Permissions []struct {
			Name string `json:"name"`
		} `json:"permissions"`
	}
	err = s.getJSON(ctx, "/api/v1/team/self", &self)
	switch code, msg := apiStatus(err); {
	case code == http.StatusNotFound:
		err = fmt.Errorf("the API key belongs to no team (404 %q): create the key under a team", msg)
	case code == http.StatusBadRequest:
		err = fmt.Errorf("%q (400): use an API key, not a user token", msg)
	default:
		err = classify(err, "read the API key's team (GET /api/v1/team/self)", "")
	}
	out = append(out, sinks.Check{Name: "API key valid", Err: err})
	if err != nil {
		return out
	}
	held := map[string]bool{}
	for _, p := range self.Permissions {
		held[p.Name] = true
	}
	for _, n := range s.needs() {
		var err error
		ok := false
		for _, p := range n.perms {
			ok = ok || held[p]
		}
		if !ok {
			grants := make([]string, len(n.perms))
			for i, p := range n.perms {
				grants[i] = grant(p)
			}
			err = fmt.Errorf("the API key's team %q lacks %s, needed to %s: %s",
				self.Name, strings.Join(n.perms, " or "), n.what, strings.Join(grants, ", or "))
		}
		out = append(out, sinks.Check{Name: "permission " + strings.Join(n.perms, " or ") + " (" + n.what + ")", Err: err})
	}
	return out
}
