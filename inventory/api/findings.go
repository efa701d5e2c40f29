package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/schemas"
)

// FindingsField is the workloads query's findings filter: findings=true
// lists only the workloads with open policy findings, each with them in
// its notes (NoteFindings), as `bomstream find --findings` does.
const FindingsField = "findings"

// NoteFindings is the note (inventory.Entry.Notes) that holds an entry's
// open findings, a []schemas.FindingEvent.
const NoteFindings = "findings"

// Findings is where the findings filter looks: the open policy findings
// of each workload (the process's findings index, package
// inventory/findings, and FINDINGS for the events). It is safe for
// concurrent use.
type Findings interface {
	// Loaded reports whether FINDINGS has been read once: before, the
	// filter answers 503.
	Loaded() bool
	// OpenCount is the number of open findings of the workload
	// cluster/uid. It is called under the inventory index's read lock.
	OpenCount(cluster, uid string) int
	// Open reads the open findings of each workload, in the order given,
	// each in `bomstream findings list` order.
	Open(ctx context.Context, ws []schemas.Workload) ([][]schemas.FindingEvent, error)
}

// FilterFindings makes /api/v1/workloads take findings=true, answered
// from f.
func (s *Server) FilterFindings(f Findings) { s.findings = f }

// ParseQuery reads a /api/v1/workloads query as the server does, without
// its paging: the fields of inventory.Fields, the extensions ext, and
// findings=true|false (reported, not set in the query: the server applies
// it). A client checks its query with it before it asks.
func ParseQuery(fields map[string][]string, now time.Time, ext map[string]inventory.Extension) (q inventory.Query, findings bool, err error) {
	all := maps.Clone(ext)
	if all == nil {
		all = map[string]inventory.Extension{}
	}
	all[FindingsField] = func(vs []string, _ *inventory.Query) error {
		if len(vs) != 1 {
			return errors.New("give it once: true or false")
		}
		b, err := strconv.ParseBool(vs[0])
		if err != nil {
			return errors.New("not true or false")
		}
		findings = b
		return nil
	}
	q, err = inventory.ParseQueryWith(fields, now, all)
	return q, findings, err
}

// filterFindings keeps in q only the workloads with open findings. The
// error comes with the status to answer when the server cannot.
func (s *Server) filterFindings(q *inventory.Query) (int, error) {
	switch {
	case s.findings == nil:
		return http.StatusBadRequest, errors.New("query: findings: this server keeps no policy findings")
	case !s.findings.Loaded():
		return http.StatusServiceUnavailable, errors.New("query: findings: FINDINGS is still being read: ask again in a moment")
	}
	prev := q.Check
	q.Check = func(e *inventory.Entry) bool {
		return (prev == nil || prev(e)) && s.findings.OpenCount(e.Cluster, e.UID) > 0
	}
	return 0, nil
}

// annotate puts each entry's open findings in its notes (NoteFindings).
func (s *Server) annotate(ctx context.Context, es []inventory.Entry) error {
	ws := make([]schemas.Workload, len(es))
	for i, e := range es {
		ws[i] = schemas.Workload{Cluster: e.Cluster, Namespace: e.Namespace, Kind: e.Kind, APIVersion: e.APIVersion, Name: e.Name, UID: e.UID}
	}
	open, err := s.findings.Open(ctx, ws)
	if err == nil && len(open) != len(es) {
		err = fmt.Errorf("%d answers for %d workloads", len(open), len(es))
	}
	if err != nil {
		return fmt.Errorf("findings of the page: %w", err)
	}
	for i := range es {
		notes := maps.Clone(es[i].Notes)
		if notes == nil {
			notes = map[string]any{}
		}
		notes[NoteFindings] = open[i]
		es[i].Notes = notes
	}
	return nil
}
