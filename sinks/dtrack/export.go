package dtrack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	dtrack "github.com/DependencyTrack/client-go"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/sinks"
)

// errNotImported: the token says processing ended, and the project's
// lastBomImport did not move.
var errNotImported = errors.New("not imported")

// Export implements sinks.Sink: it uploads the BOM to the workload's
// project (creating it and its parents when missing), waits until
// Dependency-Track has imported it, and reactivates a project a tombstone
// had deactivated. A superseded BOM changes nothing: a project holds the
// components of its last upload only.
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	t, err := s.target(b.Workload)
	if err != nil {
		return err
	}
	if b.Superseded && s.byName {
		s.log.Debug("superseded: a newer BOM of this name was exported", zap.Stringer("workload", b.Workload), zap.Uint64("changeSeq", b.ChangeSeq))
		return nil
	}
	c, err := s.client(ctx)
	if err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	mu := s.lock(t)
	mu.Lock()
	defer mu.Unlock()
	start := time.Now()
	if err := s.export(ctx, c, t, b); err != nil {
		return fmt.Errorf("export %s to %s: %w", b.Workload, t, err)
	}
	s.m.exportSeconds.Observe(time.Since(start).Seconds())
	return nil
}

func (s *Sink) export(ctx context.Context, c *dtrack.Client, t target, b sinks.BOM) error {
	st := s.getState(t)
	cur, found, err := s.lookup(ctx, c, t.name, t.version)
	if err != nil {
		return err
	}
	if found && st.bomHash == b.BomHash {
		switch {
		case st.token == "" && cur.LastBOMImport == st.imported:
			// Imported by this process and untouched since; only the
			// reactivation may be missing (it failed after the import).
			s.log.Debug("already imported", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash))
			return s.imported(ctx, c, t, b, cur, nil)
		case st.token != "":
			// An earlier attempt uploaded this BOM and gave up waiting (an
			// outage, a timeout, a canceled context): wait again rather
			// than upload a second time.
			p, err := s.await(ctx, c, t, st.token, st.before)
			if err == nil {
				return s.imported(ctx, c, t, b, p, nil)
			}
			if !errors.Is(err, errNotImported) {
				return err
			}
			// Processing ended without an import (or the server restarted
			// and forgot the token): upload again.
		}
	}
	var parent *uuid.UUID
	if s.cfg.hierarchy() {
		if parent, err = s.ensureParents(ctx, c, t); err != nil {
			return err
		}
	}
	before := 0
	if found {
		before = cur.LastBOMImport
	}
	token, err := s.upload(ctx, c, t, b, parent)
	if err != nil {
		return err
	}
	s.setState(t, projectState{bomHash: b.BomHash, token: token, before: before})
	waitStart := time.Now()
	p, err := s.await(ctx, c, t, token, before)
	if errors.Is(err, errNotImported) {
		s.setState(t, projectState{})
		return sinks.Permanent(fmt.Errorf("Dependency-Track accepted the BOM but did not import it: its processing failed (see the BOM_PROCESSING_FAILED notification or the API server's log, e.g. for a component type it does not support)"))
	}
	if err != nil {
		return err
	}
	s.m.processingSeconds.Observe(time.Since(waitStart).Seconds())
	return s.imported(ctx, c, t, b, p, parent)
}

// imported records a confirmed import and repairs what an upload does not
// change: it reactivates an inactive project (a tombstone deactivated it)
// and moves an existing project under its parent.
func (s *Sink) imported(ctx context.Context, c *dtrack.Client, t target, b sinks.BOM, p dtrack.Project, parent *uuid.UUID) error {
	s.setState(t, projectState{bomHash: b.BomHash, imported: p.LastBOMImport})
	reparent := parent != nil && (p.ParentRef == nil || p.ParentRef.UUID != *parent)
	if p.Active && !reparent {
		s.log.Debug("exported", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash), zap.String("project", p.UUID.String()))
		return nil
	}
	if !reparent {
		parent = nil
	}
	if err := s.patch(ctx, c, p, true, parent); err != nil {
		return err
	}
	if !p.Active {
		s.log.Info("project reactivated", zap.Stringer("workload", b.Workload), zap.String("project", p.UUID.String()))
	}
	return nil
}

// upload sends the BOM with PUT, or with multipart POST when its base64
// form is over PutLimit, and returns the event token.
func (s *Sink) upload(ctx context.Context, c *dtrack.Client, t target, b sinks.BOM, parent *uuid.UUID) (string, error) {
	latest := true
	req := dtrack.BOMUploadRequest{
		ProjectName: t.name, ProjectVersion: t.version, AutoCreate: s.cfg.autoCreate(),
		ProjectTags: normalizeTags(append(append([]string(nil), t.tags...), runtimes(b.Body)...)),
		ParentUUID:  parent, IsLatest: &latest,
	}
	what := "upload bom"
	var token dtrack.BOMUploadToken
	var err error
	if base64.StdEncoding.EncodedLen(len(b.Body)) <= PutLimit {
		req.BOM = base64.StdEncoding.EncodeToString(b.Body)
		token, err = c.BOM.Upload(ctx, req)
		s.m.uploads.WithLabelValues("put").Inc()
	} else {
		what = "upload bom (multipart)"
		req.BOM = string(b.Body)
		token, err = c.BOM.PostBom(ctx, req)
		s.m.uploads.WithLabelValues("multipart").Inc()
	}
	if err != nil {
		switch code, msg := apiStatus(err); {
		case code == http.StatusNotFound && msg == textProjectNotFound:
			return "", sinks.Permanent(fmt.Errorf("%s: the project does not exist and autoCreate is off (404 %q): create it in Dependency-Track, or set autoCreate: true", what, msg))
		case code == http.StatusNotFound && msg == textParentNotFound,
			code == http.StatusBadRequest && isDetail(msg, textInactiveParent):
			// The parent was deleted or deactivated behind the sink's back:
			// look it up again on the retry.
			s.forgetParents(t)
			return "", fmt.Errorf("%s: parent project: Dependency-Track answered %d %q", what, code, msg)
		}
		return "", classify(err, what, PermBOMUpload)
	}
	if token == "" {
		return "", fmt.Errorf("%s: Dependency-Track answered without a token", what)
	}
	return string(token), nil
}

// isDetail reports whether body is a problem document with detail text.
func isDetail(body, text string) bool {
	var p struct {
		Detail string `json:"detail"`
	}
	return json.Unmarshal([]byte(body), &p) == nil && p.Detail == text
}

// await waits until the upload with token is imported: until the project's
// lastBomImport differs from before (the import committed; vulnerability
// analysis may still run under the token), or the token says processing
// ended without that (errNotImported). Errors while polling (an outage) do
// not end the wait before ProcessingTimeout, except those a retry cannot
// fix; the timeout is a transient error, and the caller keeps the token to
// resume.
func (s *Sink) await(ctx context.Context, c *dtrack.Client, t target, token string, before int) (dtrack.Project, error) {
	deadline := time.Now().Add(s.cfg.ProcessingTimeout)
	delay := 2 * time.Millisecond
	var last error
	for {
		processing, perr := c.Event.IsBeingProcessed(ctx, dtrack.EventToken(token))
		perr = classify(perr, "read the upload's token", "")
		p, found, lerr := s.lookup(ctx, c, t.name, t.version)
		for _, err := range []error{perr, lerr} {
			if err != nil && (ctx.Err() != nil || sinks.IsPermanent(err)) {
				return dtrack.Project{}, err
			}
			if err != nil {
				last = err
			}
		}
		if lerr == nil && found && p.LastBOMImport != before {
			return p, nil
		}
		if perr == nil && lerr == nil && !processing {
			return dtrack.Project{}, errNotImported
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			if last != nil {
				return dtrack.Project{}, fmt.Errorf("not imported within processingTimeout %s: %w", s.cfg.ProcessingTimeout, last)
			}
			return dtrack.Project{}, fmt.Errorf("not imported within processingTimeout %s: Dependency-Track is still processing it", s.cfg.ProcessingTimeout)
		}
		timer := time.NewTimer(min(delay, wait))
		select {
		case <-ctx.Done():
			timer.Stop()
			return dtrack.Project{}, fmt.Errorf("wait for the import: %w", ctx.Err())
		case <-timer.C:
		}
		delay = min(delay*2, s.cfg.PollInterval)
	}
}

// lookup finds a project by name and version; found is false on 404.
func (s *Sink) lookup(ctx context.Context, c *dtrack.Client, name, version string) (dtrack.Project, bool, error) {
	p, err := c.Project.Lookup(ctx, name, version)
	if code, _ := apiStatus(err); code == http.StatusNotFound {
		return dtrack.Project{}, false, nil
	}
	if err != nil {
		return dtrack.Project{}, false, classify(err, fmt.Sprintf("look up project %q version %q", name, version), PermViewPortfolio)
	}
	return p, true, nil
}

// patch sets p's active flag (and parent when not nil) with PATCH, sending
// isLatest as it is: PATCH takes an absent active as true and an absent
// isLatest as false (see DEPENDENCY-TRACK.md). 304 (nothing changed) is
// success.
func (s *Sink) patch(ctx context.Context, c *dtrack.Client, p dtrack.Project, active bool, parent *uuid.UUID) error {
	latest := p.IsLatest != nil && *p.IsLatest
	body := dtrack.Project{Active: active, IsLatest: &latest}
	if parent != nil {
		body.ParentRef = &dtrack.ParentRef{UUID: *parent}
	}
	_, err := c.Project.Patch(ctx, p.UUID, body)
	if code, _ := apiStatus(err); code == http.StatusNotModified {
		return nil
	}
	return classify(err, fmt.Sprintf("update project %s", p.UUID), PermPortfolioManagement)
}

// ensureParents returns the UUID of the project the workload's project goes
// under (its namespace's, or its cluster's when cluster-scoped), creating
// the cluster and namespace projects when missing.
func (s *Sink) ensureParents(ctx context.Context, c *dtrack.Client, t target) (*uuid.UUID, error) {
	cl, err := s.ensureParent(ctx, c, t.cluster, nil, "Kubernetes cluster")
	if err != nil || t.namespace.name == "" {
		return cl, err
	}
	return s.ensureParent(ctx, c, t.namespace, cl, "Kubernetes namespace")
}

func (s *Sink) ensureParent(ctx context.Context, c *dtrack.Client, r ref, parent *uuid.UUID, what string) (*uuid.UUID, error) {
	key := r.name + "\x00" + r.version
	s.mu.Lock()
	if id, ok := s.parents[key]; ok {
		s.mu.Unlock()
		return &id, nil
	}
	mu := s.parentMu[key]
	if mu == nil {
		mu = &sync.Mutex{}
		s.parentMu[key] = mu
	}
	s.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	s.mu.Lock()
	id, ok := s.parents[key]
	s.mu.Unlock()
	if ok {
		return &id, nil
	}
	p, found, err := s.lookup(ctx, c, r.name, r.version)
	if err != nil {
		return nil, err
	}
	if !found {
		p, err = c.Project.Create(ctx, dtrack.Project{
			Name: r.name, Version: r.version, Description: what + " (created by bomstream)",
			Tags: normalizeTags(r.tags), Active: true, ParentRef: parentRef(parent),
		})
		if code, _ := apiStatus(err); code == http.StatusConflict {
			// Created meanwhile by another replica.
			if p, found, err = s.lookup(ctx, c, r.name, r.version); err == nil && !found {
				err = fmt.Errorf("create project %q version %q: it exists (409) but cannot be found", r.name, r.version)
			}
		} else if err != nil {
			return nil, classify(err, fmt.Sprintf("create project %q version %q", r.name, r.version), PermPortfolioManagement)
		} else {
			s.log.Info("project created", zap.String("project", r.name), zap.String("version", r.version), zap.String("uuid", p.UUID.String()))
		}
		if err != nil {
			return nil, err
		}
	}
	if !p.Active {
		// An inactive project cannot take new children.
		if err := s.patch(ctx, c, p, true, nil); err != nil {
			return nil, err
		}
		s.log.Info("parent project reactivated", zap.String("project", r.name), zap.String("version", r.version))
	}
	s.mu.Lock()
	s.parents[key] = p.UUID
	s.mu.Unlock()
	id = p.UUID
	return &id, nil
}

func parentRef(id *uuid.UUID) *dtrack.ParentRef {
	if id == nil {
		return nil
	}
	return &dtrack.ParentRef{UUID: *id}
}

// forgetParents drops t's parents from the cache.
func (s *Sink) forgetParents(t target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parents, t.cluster.name+"\x00"+t.cluster.version)
	delete(s.parents, t.namespace.name+"\x00"+t.namespace.version)
}
