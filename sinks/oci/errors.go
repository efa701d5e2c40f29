package oci

import (
	"errors"
	"fmt"
	"net/http"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/bomstream/bomstream/sinks"
)

// classify turns an error of step (a phrase: "resolve image manifest
// sha256:... in reg/repo") on repository ref into the sink's error:
// permanent for credentials, permissions, missing manifests or
// repositories and rejected requests; transient for 408, 429, 5xx,
// timeouts and connection errors. nil stays nil.
func (s *Sink) classify(err error, step string, ref registry.Reference) error {
	if err == nil {
		return nil
	}
	host, repo := ref.Registry, ref.Registry+"/"+ref.Repository
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		if s.creds == nil {
			return sinks.Permanent(fmt.Errorf("%s: registry %s asks for credentials (401): set dockerConfig to a docker config.json with an auths entry for %s: %w", step, host, host, err))
		}
		return sinks.Permanent(fmt.Errorf("%s: registry %s asks for credentials (401) and dockerConfig %s has none for it: add an auths entry for %s: %w", step, host, s.creds.path, host, err))
	}
	var er *errcode.ErrorResponse
	if !errors.As(err, &er) {
		if errors.Is(err, errdef.ErrNotFound) {
			return sinks.Permanent(fmt.Errorf("%s: not found (deleted from the registry, or the credentials cannot see it): %w", step, err))
		}
		return fmt.Errorf("%s: %w", step, err)
	}
	switch c := er.StatusCode; {
	case c == http.StatusUnauthorized && s.creds == nil:
		return sinks.Permanent(fmt.Errorf("%s: registry %s asks for credentials (401): set dockerConfig to a docker config.json with an auths entry for %s: %w", step, host, host, err))
	case c == http.StatusUnauthorized:
		return sinks.Permanent(fmt.Errorf("%s: registry %s rejected the credentials (401): check the auths entry for %s in dockerConfig %s: %w", step, host, host, s.creds.path, err))
	case c == http.StatusForbidden:
		return sinks.Permanent(fmt.Errorf("%s: denied (403): the credentials for %s need pull and push access to repository %s: %w", step, host, repo, err))
	case c == http.StatusNotFound:
		return sinks.Permanent(fmt.Errorf("%s: not found (404): %w", step, err))
	case c == http.StatusRequestTimeout, c == http.StatusTooManyRequests, c >= 500:
		return fmt.Errorf("%s: %w", step, err)
	case c >= 400:
		return sinks.Permanent(fmt.Errorf("%s: rejected (%d): %w", step, c, err))
	}
	return fmt.Errorf("%s: %w", step, err)
}

// isNotFound reports a 404 of any kind.
func isNotFound(err error) bool {
	var er *errcode.ErrorResponse
	return errors.Is(err, errdef.ErrNotFound) || (errors.As(err, &er) && er.StatusCode == http.StatusNotFound)
}

// joinErrors combines the errors of one BOM's images: transient when any
// is (a retry may fix it, and pushes already done are no-ops then),
// permanent when all are.
func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	var transient []error
	for _, err := range errs {
		if !sinks.IsPermanent(err) {
			transient = append(transient, err)
		}
	}
	if len(transient) == 0 {
		return sinks.Permanent(errors.Join(errs...))
	}
	// Name the permanent ones without wrapping them: a wrapped Permanent
	// would make the whole error permanent.
	for _, err := range errs {
		if sinks.IsPermanent(err) {
			transient = append(transient, errors.New(err.Error()))
		}
	}
	return errors.Join(transient...)
}
