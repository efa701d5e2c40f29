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

// needs lists the permissions the configured features need on srv's line:
// 4.x knows one PORTFOLIO_MANAGEMENT; 5.x also takes the fine-grained
// PORTFOLIO_MANAGEMENT_CREATE, _UPDATE and _DELETE in its place.
func (s *Sink) needs(srv server) []need {
	out := []need{
		{[]string{PermBOMUpload}, "upload BOMs"},
		{[]string{PermViewPortfolio}, "look projects up, confirm each import and list the children of parent projects"},
	}
	var create, update, del []string
	if s.cfg.hierarchy() {
		create = append(create, "create the cluster and namespace projects")
	}
	switch s.cfg.OnTombstone {
	case TombstoneDeactivate:
		update = append(update, "deactivate the projects of deleted workloads and reactivate them when they come back")
	case TombstoneDelete:
		del = append(del, "delete the projects of deleted workloads")
	}
	update = append(update, "keep the tags, parent and latest flag of existing projects current")
	autoCreate := []string{PermProjectCreationUpload, PermPortfolioManagement}
	if !srv.v5 {
		out = append(out, need{[]string{PermPortfolioManagement}, strings.Join(append(append(create, del...), update...), ", ")})
	} else {
		autoCreate = append(autoCreate, PermPortfolioCreate)
		for _, n := range []struct {
			fine string
			what []string
		}{{PermPortfolioCreate, create}, {PermPortfolioUpdate, update}, {PermPortfolioDelete, del}} {
			if len(n.what) > 0 {
				out = append(out, need{[]string{PermPortfolioManagement, n.fine}, strings.Join(n.what, ", ")})
			}
		}
	}
	if s.cfg.autoCreate() {
		out = append(out, need{autoCreate, "create workload projects on upload (autoCreate)"})
	}
	return out
}

// Check implements sinks.Checker: the API server answers GET /api/version
// with a supported version that takes what the configuration sends (its
// line and the features in use are named), the API key is valid (GET
// /api/v1/team/self, which needs no permission and lists the key's team's
// permissions), and the team holds each permission the configuration
// needs, named as the server's line names them. It writes nothing.
func (s *Sink) Check(ctx context.Context) []sinks.Check {
	var out []sinks.Check
	v, err := s.serverVersion(ctx)
	out = append(out, sinks.Check{Name: "Dependency-Track reachable at " + s.cfg.URL, Err: err})
	if err != nil {
		return out
	}
	srv := serverOf(v)
	out = append(out, sinks.Check{Name: fmt.Sprintf("Dependency-Track version %s supported (features in use: %s)", v, strings.Join(srv.features(s.cfg, s.spec), ", ")), Err: s.usable(srv)})

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
	for _, n := range s.needs(srv) {
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
