package findings

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// States a Filter selects.
const (
	StateOpen     = "open"
	StateResolved = "resolved"
	StateAll      = "all"
)

// Filter selects findings by their current state; empty fields select
// all.
type Filter struct {
	Rule      string `json:"rule,omitempty"`
	Severity  string `json:"severity,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// State is open (the default), resolved or all.
	State string `json:"state,omitempty"`
}

// Validate names the field at fault.
func (f Filter) Validate() error {
	var errs []error
	switch f.State {
	case "", StateOpen, StateResolved, StateAll:
	default:
		errs = append(errs, fmt.Errorf("state: %q is not open, resolved or all", f.State))
	}
	if f.Severity != "" && !schemas.ValidFindingSeverity(f.Severity) {
		errs = append(errs, fmt.Errorf("severity: %q is not one of %s", f.Severity, strings.Join(schemas.FindingSeverities, ", ")))
	}
	if f.Rule != "" && !schemas.ValidFindingRule(f.Rule) {
		errs = append(errs, fmt.Errorf("rule: %q is not a rule id (1-63 characters of [a-z0-9-])", f.Rule))
	}
	if strings.ContainsAny(f.Cluster, ".*> ") {
		errs = append(errs, fmt.Errorf("cluster: %q is not a cluster name", f.Cluster))
	}
	return errors.Join(errs...)
}

func (f Filter) match(ev schemas.FindingEvent) bool {
	state := cmp.Or(f.State, StateOpen)
	return (state == StateAll || state == StateOpen && ev.State == schemas.FindingOpened || state == StateResolved && ev.State == schemas.FindingResolved) &&
		(f.Rule == "" || ev.Rule == f.Rule) && (f.Severity == "" || ev.Severity == f.Severity) &&
		(f.Cluster == "" || ev.Workload.Cluster == f.Cluster) && (f.Namespace == "" || ev.Workload.Namespace == f.Namespace)
}

// List returns the findings f selects, each as its last event, sorted by
// cluster, namespace, kind, name, rule and subject.
func List(ctx context.Context, store Store, f Filter) ([]schemas.FindingEvent, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var out []schemas.FindingEvent
	err := Each(ctx, store, f.Cluster, func(ev schemas.FindingEvent, _ uint64) error {
		if f.match(ev) {
			out = append(out, ev)
		}
		return nil
	})
	slices.SortFunc(out, compareFindings)
	return out, err
}

func compareFindings(a, b schemas.FindingEvent) int {
	return cmp.Or(cmp.Compare(a.Workload.Cluster, b.Workload.Cluster), cmp.Compare(a.Workload.Namespace, b.Workload.Namespace),
		cmp.Compare(a.Workload.Kind, b.Workload.Kind), cmp.Compare(a.Workload.Name, b.Workload.Name),
		cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Subject, b.Subject))
}

// WorkloadFindings are the open findings of one workload.
type WorkloadFindings struct {
	Workload schemas.Workload       `json:"workload"`
	Findings []schemas.FindingEvent `json:"findings"`
}

// OpenFor returns the open findings of each workload, in the order given
// (for `find --findings`): one direct read per workload (a few more for a
// workload whose findings are stored in the per-finding layout only),
// whatever the size of FINDINGS.
func OpenFor(ctx context.Context, store Store, ws []schemas.Workload) ([]WorkloadFindings, error) {
	out := make([]WorkloadFindings, 0, len(ws))
	for _, w := range ws {
		st, err := WorkloadState(ctx, store, w)
		if err != nil {
			return out, err
		}
		wf := WorkloadFindings{Workload: w, Findings: []schemas.FindingEvent{}}
		for i := range st.Set.Findings {
			if ev := st.Set.Event(i); ev.State == schemas.FindingOpened {
				wf.Findings = append(wf.Findings, ev)
			}
		}
		slices.SortFunc(wf.Findings, compareFindings)
		out = append(out, wf)
	}
	return out, nil
}

// ErrBadPage: a page token that no answer gave.
var ErrBadPage = errors.New("bad page token")

// Page is one page of the findings API.
type Page struct {
	Items []schemas.FindingEvent `json:"items"`
	Total int                    `json:"total"`
	// Next is the page token of the next page; "" on the last one.
	Next string `json:"next,omitempty"`
}

// ListPage lists the findings f selects and cuts page (a token from an
// earlier Page, "" for the first) of at most limit items.
func ListPage(ctx context.Context, store Store, f Filter, page string, limit int) (Page, error) {
	from, err := pageOffset(page)
	if err != nil {
		return Page{}, err
	}
	all, err := List(ctx, store, f)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: []schemas.FindingEvent{}, Total: len(all)}
	if from < len(all) {
		to := min(from+limit, len(all))
		p.Items = all[from:to]
		if to < len(all) {
			p.Next = strconv.Itoa(to)
		}
	}
	return p, nil
}

// pageOffset reads a page token: the offset of the page's first finding.
func pageOffset(page string) (int, error) {
	if page == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(page)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("page: %q is not a page token of this API: %w", page, ErrBadPage)
	}
	return n, nil
}

// Page is ListPage answered from the index: the same findings, in the
// same order, reading back only the page's events.
func (ix *Index) Page(ctx context.Context, store MsgReader, f Filter, page string, limit int) (Page, error) {
	from, err := pageOffset(page)
	if err != nil {
		return Page{}, err
	}
	sel, err := ix.Select(f, from, from+limit)
	if err != nil {
		return Page{}, err
	}
	items, err := sel.Events(ctx, store)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: items, Total: sel.Total}
	if from+limit < sel.Total {
		p.Next = strconv.Itoa(from + limit)
	}
	return p, nil
}

// Handler serves GET /api/v1/findings: the query parameters rule,
// severity, cluster, namespace and state (open, resolved, all) filter as
// Filter does; limit (1-1000, default 100) and page (the Next of the last
// answer) paginate. The answer is a Page as JSON; a bad parameter is a 400
// naming it. Mount it at the path of your choice; it reads only. With an
// index that has loaded (ix may be nil), pages come from it (Index.Page);
// else each is read from the stream (ListPage).
func Handler(store Store, ix *Index) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method " + r.Method + " not allowed"})
			return
		}
		q := r.URL.Query()
		for k := range q {
			if !slices.Contains([]string{"rule", "severity", "cluster", "namespace", "state", "limit", "page"}, k) {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("query parameter %q is unknown (known: rule, severity, cluster, namespace, state, limit, page)", k)})
				return
			}
		}
		f := Filter{Rule: q.Get("rule"), Severity: q.Get("severity"), Cluster: q.Get("cluster"), Namespace: q.Get("namespace"), State: q.Get("state")}
		limit := 100
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit: %q is not a number in 1..1000", v)})
				return
			}
			limit = n
		}
		if err := f.Validate(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		var p Page
		var err error
		if ix != nil && ix.Loaded() {
			p, err = ix.Page(r.Context(), store, f, q.Get("page"), limit)
		} else {
			p, err = ListPage(r.Context(), store, f, q.Get("page"), limit)
		}
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, ErrBadPage) {
				status = http.StatusBadRequest
			}
			writeJSON(w, status, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, p)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
