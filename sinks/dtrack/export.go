package dtrack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
	var parent *uuid.UUID
	var err error
	if s.cfg.hierarchy() {
		if parent, err = s.ensureParents(ctx, c, t); err != nil {
			return err
		}
	}
	cur, found, err := s.lookup(ctx, c, t.name, t.version)
	if err != nil {
		return err
	}
	before := 0
	if found {
		before = cur.LastBOMImport
		p, there, err := s.alreadyThere(ctx, c, t, b, cur)
		if err != nil {
			return err
		}
		if there {
			return s.imported(ctx, c, t, b, p, parent)
		}
	}
	token, err := s.upload(ctx, t, b, parent)
	if pe, ok := errors.AsType[errParent](err); ok {
		// The parent was deleted or deactivated behind the sink's back:
		// repair it (re-create, reactivate) and upload once more.
		s.log.Info("repairing parent projects", zap.Stringer("workload", b.Workload), zap.Error(pe.err))
		s.forgetParents(t)
		if parent, err = s.ensureParents(ctx, c, t); err != nil {
			return err
		}
		token, err = s.upload(ctx, t, b, parent)
		if errors.As(err, &pe) {
			return fmt.Errorf("%w (after repairing the parent projects)", pe.err)
		}
	}
	if sinks.IsPermanent(err) {
		s.dropExportTag(ctx, c, t, b)
	}
	if err != nil {
		return err
	}
	s.setState(t, projectState{bomHash: b.BomHash, token: token, before: before})
	waitStart := time.Now()
	p, err := s.await(ctx, c, t, token, before)
	if errors.Is(err, errNotImported) {
		s.setState(t, projectState{})
		s.dropExportTag(ctx, c, t, b)
		return sinks.Permanent(fmt.Errorf("Dependency-Track accepted the BOM but did not import it: its processing failed (see the BOM_PROCESSING_FAILED notification or the API server's log, e.g. for a component type it does not support)"))
	}
	if err != nil {
		return err
	}
	s.m.processingSeconds.Observe(time.Since(waitStart).Seconds())
	return s.imported(ctx, c, t, b, p, parent)
}

// alreadyThere reports whether existing project cur has b already (there,
// with the project as it is once imported), so that nothing is uploaded:
// this process imported it and nothing touched the project since; or this
// process uploaded it and gave up waiting (an outage, a timeout), and the
// wait, resumed, sees it imported; or the export tag says that an earlier
// process uploaded it (and died before its ledger write). A project that
// never had an import is given processingTimeout for it; after that, or
// when the token says processing ended without an import, b is uploaded
// again.
func (s *Sink) alreadyThere(ctx context.Context, c *dtrack.Client, t target, b sinks.BOM, cur dtrack.Project) (dtrack.Project, bool, error) {
	st := s.getState(t)
	var p dtrack.Project
	var err error
	switch {
	case st.bomHash == b.BomHash && st.token == "" && cur.LastBOMImport == st.imported:
		s.log.Debug("already imported", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash))
		return cur, true, nil
	case st.bomHash == b.BomHash && st.token != "":
		p, err = s.await(ctx, c, t, st.token, st.before)
	case exported(cur.Tags) == b.BomHash && cur.LastBOMImport != 0:
		p = cur
	case exported(cur.Tags) == b.BomHash:
		p, err = s.await(ctx, c, t, "", 0)
	default:
		return cur, false, nil
	}
	if errors.Is(err, errNotImported) {
		return cur, false, nil
	}
	if err == nil && st.token == "" {
		s.log.Info("already uploaded (export tag): not uploading again", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash))
	}
	return p, err == nil, err
}

// imported records a confirmed import and repairs what an upload does not
// change on an existing project, in one PATCH that always sends active and
// isLatest: it reactivates an inactive project (a tombstone deactivated
// it), moves it under its parent, sets the latest flag, and sets its tags
// when the upload could not (a key without PORTFOLIO_MANAGEMENT, or
// PORTFOLIO_MANAGEMENT_UPDATE on 5.x, leaves them alone). A refused PATCH
// that was only about tags or the latest flag is a warning, not a failure.
func (s *Sink) imported(ctx context.Context, c *dtrack.Client, t target, b sinks.BOM, p dtrack.Project, parent *uuid.UUID) error {
	s.setState(t, projectState{bomHash: b.BomHash, imported: p.LastBOMImport})
	want := s.tags(t, b)
	reparent := parent != nil && (p.ParentRef == nil || p.ParentRef.UUID != *parent)
	retag := !slices.Equal(tagNames(normalizeTags(tagNames(p.Tags))), tagNames(want))
	relatest := p.IsLatest == nil || !*p.IsLatest
	if p.Active && !reparent && !retag && !relatest {
		s.log.Debug("exported", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash), zap.String("project", p.UUID.String()))
		return nil
	}
	latest := true
	body := dtrack.Project{Active: true, IsLatest: &latest, Tags: want}
	if reparent {
		body.ParentRef = &dtrack.ParentRef{UUID: *parent}
	}
	_, err := c.Project.Patch(ctx, p.UUID, body)
	code, _ := apiStatus(err)
	switch {
	case code == http.StatusNotModified:
		err = nil
	case code == http.StatusForbidden && p.Active && !reparent:
		s.log.Warn("tags or latest flag of an existing project not updated: the API key may not manage the portfolio",
			zap.Stringer("workload", b.Workload), zap.String("project", p.UUID.String()), zap.String("need", PermPortfolioManagement+" or "+PermPortfolioUpdate))
		return nil
	}
	if err != nil {
		return classify(err, fmt.Sprintf("update project %s", p.UUID), PermPortfolioManagement)
	}
	if !p.Active {
		s.log.Info("project reactivated", zap.Stringer("workload", b.Workload), zap.String("project", p.UUID.String()))
	}
	return nil
}

// dropExportTag removes b's export tag from its project after an upload
// that Dependency-Track refused or could not import: the tags of a request
// are bound before the BOM is validated, so the tag may be there. Best
// effort: a tag left behind only makes the next export of the same BOM
// look for its import first.
func (s *Sink) dropExportTag(ctx context.Context, c *dtrack.Client, t target, b sinks.BOM) {
	p, found, err := s.lookup(ctx, c, t.name, t.version)
	if err != nil || !found || exported(p.Tags) != b.BomHash {
		return
	}
	latest := p.IsLatest != nil && *p.IsLatest
	body := dtrack.Project{Active: p.Active, IsLatest: &latest, Tags: normalizeTags(withoutExportTag(p.Tags))}
	if _, err := c.Project.Patch(ctx, p.UUID, body); err != nil {
		if code, _ := apiStatus(err); code != http.StatusNotModified {
			s.log.Warn("export tag not removed after a failed upload", zap.Stringer("workload", b.Workload),
				zap.Error(classify(err, "update project "+p.UUID.String(), PermPortfolioManagement)))
		}
	}
}

func tagNames(tags []dtrack.Tag) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = t.Name
	}
	return out
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
		processing, perr := true, error(nil)
		if token != "" {
			processing, perr = c.Event.IsBeingProcessed(ctx, dtrack.EventToken(token))
			perr = classify(perr, "read the upload's token", "")
		}
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
		if wait <= 0 && token == "" && last == nil {
			return dtrack.Project{}, errNotImported
		}
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
