package oci

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/bomstream/bomstream/sinks"
)

// Check implements sinks.Checker: the docker config reads; each registry
// to check (that of repository, and checkRegistries) answers its API root
// with the credentials; and, with repository set, a blob upload there can
// start (it is cancelled at once: nothing is written). Images' own
// repositories are known only per BOM, so they are not checked here.
func (s *Sink) Check(ctx context.Context) []sinks.Check {
	var out []sinks.Check
	if s.creds != nil {
		c := sinks.Check{Name: "docker config " + s.creds.path + " readable"}
		_, c.Err = s.creds.current()
		out = append(out, c)
	}
	if s.signer != nil {
		out = append(out, sinks.NewCheck(s.signer.Check()))
	}
	hosts := []string{}
	seen := map[string]bool{}
	if s.repository != nil {
		hosts = append(hosts, s.repository.Registry)
		seen[s.repository.Registry] = true
	}
	for _, h := range s.checkHosts {
		if !seen[h] {
			hosts = append(hosts, h)
			seen[h] = true
		}
	}
	for _, h := range hosts {
		c := sinks.Check{Name: fmt.Sprintf("registry %s reachable, credentials accepted", h)}
		reg := &remote.Registry{RepositoryOptions: remote.RepositoryOptions{Client: s.client, PlainHTTP: s.plainHTTP, Reference: registry.Reference{Registry: h}}}
		if err := reg.Ping(ctx); err != nil {
			c.Err = s.classify(err, "ping registry "+h, registry.Reference{Registry: h})
		}
		out = append(out, c)
	}
	if s.repository != nil {
		ref := *s.repository
		c := sinks.Check{Name: fmt.Sprintf("push to %s/%s allowed", ref.Registry, ref.Repository)}
		c.Err = s.checkPush(ctx, ref)
		out = append(out, c)
	}
	if len(out) == 0 || (len(out) == 1 && s.signer != nil) {
		out = append(out, sinks.Check{Name: "nothing to check before BOMs arrive: images' registries are checked as they are pushed to (set repository or checkRegistries)"})
	}
	return out
}

// checkPush starts a blob upload in ref with a push scope and cancels it.
func (s *Sink) checkPush(ctx context.Context, ref registry.Reference) error {
	step := fmt.Sprintf("start a blob upload in %s/%s", ref.Registry, ref.Repository)
	scheme := "https"
	if s.plainHTTP {
		scheme = "http"
	}
	base := &url.URL{Scheme: scheme, Host: ref.Registry, Path: "/v2/" + ref.Repository + "/blobs/uploads/"}
	sctx := auth.AppendRepositoryScope(ctx, ref, auth.ActionPull, auth.ActionPush)
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, base.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return s.classify(err, step, ref)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return s.classify(&errcode.ErrorResponse{Method: req.Method, URL: req.URL, StatusCode: resp.StatusCode}, step, ref)
	}
	if loc, err := base.Parse(resp.Header.Get("Location")); err == nil && resp.Header.Get("Location") != "" {
		if del, err := http.NewRequestWithContext(sctx, http.MethodDelete, loc.String(), nil); err == nil {
			if resp, err := s.client.Do(del); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	return nil
}
