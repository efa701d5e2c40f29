package dtrack

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	dtrack "github.com/DependencyTrack/client-go"

	"github.com/bomstream/bomstream/sinks"
)

// Permission names (Dependency-Track's).
const (
	PermBOMUpload             = dtrack.PermissionBOMUpload
	PermProjectCreationUpload = dtrack.PermissionProjectCreationUpload
	PermPortfolioManagement   = dtrack.PermissionPortfolioManagement
	PermViewPortfolio         = dtrack.PermissionViewPortfolio
	// 5.x's fine-grained portfolio permissions, each accepted where
	// PORTFOLIO_MANAGEMENT is.
	PermPortfolioCreate = "PORTFOLIO_MANAGEMENT_CREATE"
	PermPortfolioUpdate = "PORTFOLIO_MANAGEMENT_UPDATE"
	PermPortfolioDelete = "PORTFOLIO_MANAGEMENT_DELETE"
)

// Texts the API server answers with, verbatim.
const (
	textCannotCreate    = "The principal does not have permission to create project."
	textParentNotFound4 = "The parent component could not be found."
	textParentNotFound5 = "The parent project could not be found."
	textInactiveParent  = "An inactive Parent cannot be selected as parent"
	textProjectNotFound = "The project could not be found."
	textUncaught        = "Uncaught internal server error"
	textCollection4     = "BOM cannot be uploaded to collection project."
	textCollection5     = "BOM cannot be uploaded to a collection project."
	textActiveChildren  = "Project cannot be set to inactive if active children are present."
)

// maxReason bounds the server's text carried in an error (it ends up in logs
// and on the dead-letter stream).
const maxReason = 4000

// grant says where a missing permission is granted.
func grant(perm string) string {
	return fmt.Sprintf("grant %s to the API key's team in Dependency-Track (Administration > Access Management > Teams > Permissions)", perm)
}

// apiStatus returns the HTTP status and body of a Dependency-Track answer
// that client-go turned into an error, or 0.
func apiStatus(err error) (int, string) {
	if ae, ok := errors.AsType[*dtrack.APIError](err); ok {
		return ae.StatusCode, strings.TrimSpace(ae.Message)
	}
	return 0, ""
}

// classify turns the error of a call that did what (a phrase: "upload bom to
// project x") and needs perm into the sink's error: permanent for what only
// an operator can fix (the key, its permissions, a rejected BOM), plain
// (transient) for 5xx, 408, 429, timeouts and connection errors. The key is
// never part of an error: client-go errors carry the URL and the body.
func classify(err error, what, perm string) error {
	if err == nil {
		return nil
	}
	code, msg := apiStatus(err)
	switch {
	case code == 0:
		// Connection refused, timeout, canceled context, unreadable answer.
		return fmt.Errorf("%s: %w", what, err)
	case code == http.StatusUnauthorized && msg == textCannotCreate:
		return sinks.Permanent(fmt.Errorf("%s: the API key may not create projects (401 %q): %s, or %s; or create the project beforehand and set autoCreate: false",
			what, msg, grant(PermProjectCreationUpload), grant(PermPortfolioManagement)))
	case code == http.StatusUnauthorized:
		return sinks.Permanent(fmt.Errorf("%s: Dependency-Track refused the API key (401 Unauthorized): the key read from apiKeyFile or apiKeyEnv is wrong, revoked or expired", what))
	case code == http.StatusForbidden && msg == "":
		return sinks.Permanent(fmt.Errorf("%s: the API key lacks the %s permission (403 Forbidden): %s", what, perm, grant(perm)))
	case code == http.StatusForbidden:
		return sinks.Permanent(fmt.Errorf("%s: %s (403 Forbidden): portfolio access control keeps the API key's team from this project; give the team access to it", what, clip(msg)))
	case code == http.StatusBadRequest:
		return sinks.Permanent(fmt.Errorf("%s: Dependency-Track rejected the request (400 Bad Request): %s", what, describe400(msg)))
	case code == http.StatusRequestEntityTooLarge:
		return sinks.Permanent(fmt.Errorf("%s: the request is too large for a proxy in front of Dependency-Track (413): raise its body size limit (nginx: client_max_body_size)", what))
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("%s: Dependency-Track answered %d %s", what, code, http.StatusText(code))
	case code == http.StatusNotModified:
		return nil
	}
	return sinks.Permanent(fmt.Errorf("%s: Dependency-Track answered %d %s: %s", what, code, http.StatusText(code), clip(msg)))
}

// describe400 renders the body of a 400 in a line: an invalid-BOM or mapping
// problem (title, detail and the schema errors), a bean-validation array
// (path: message), or the raw text.
func describe400(body string) string {
	var p struct {
		Title  string   `json:"title"`
		Detail string   `json:"detail"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &p); err == nil && p.Title != "" {
		out := p.Title
		if p.Detail != "" {
			out += ": " + p.Detail
		}
		if len(p.Errors) > 0 {
			out += ": " + strings.Join(p.Errors, "; ")
		}
		return clip(out)
	}
	var vs []struct {
		Message string `json:"message"`
		Path    string `json:"path"`
	}
	if err := json.Unmarshal([]byte(body), &vs); err == nil && len(vs) > 0 {
		parts := make([]string, 0, len(vs))
		for _, v := range vs {
			parts = append(parts, v.Path+": "+v.Message)
		}
		return clip(strings.Join(parts, "; "))
	}
	if body == "" {
		return "no reason given"
	}
	return clip(body)
}

func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + fmt.Sprintf("... (%d more bytes)", len(s)-maxReason)
}
