package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
)

// findingRow is one finding on the findings page.
type findingRow struct {
	schemas.FindingEvent
	Path string // the workload's page
}

// tally is a count with the link that filters on it.
type tally struct {
	Label, Href string
	N           int
}

type findingsData struct {
	Filter             findings.Filter
	States             []string
	Rows               []findingRow
	ByRule, ByNS       []tally
	Total, First, Last int
	Prev, Next         string
	Problem            string
}

// findings lists the findings a filter selects (findings.Filter: rule,
// severity, cluster, namespace, state), a page at a time, with their
// counts by rule and by namespace, from the findings index: only the
// page's events are read from FINDINGS.
func (p *Pages) findings(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := findings.Filter{Rule: q.Get("rule"), Severity: q.Get("severity"), Cluster: q.Get("cluster"), Namespace: q.Get("namespace"), State: q.Get("state")}
	d := findingsData{Filter: f, States: []string{findings.StateOpen, findings.StateResolved, findings.StateAll}}
	d.Filter.State = cmp.Or(f.State, findings.StateOpen)
	pageNo, err := strconv.Atoi(cmp.Or(q.Get("page"), "1"))
	if err != nil || pageNo < 1 {
		p.fail(w, http.StatusBadRequest, "findings", fmt.Errorf("page %q: not a page number", q.Get("page")))
		return
	}
	from, to := (pageNo-1)*PerPage, pageNo*PerPage
	sel, err := p.findingsIx.Select(f, from, to)
	code := http.StatusOK
	if err != nil {
		d.Problem, code = err.Error(), http.StatusBadRequest
	} else if !p.findingsIx.Loaded() {
		d.Problem = "FINDINGS is still being read: the list is not complete yet."
	}
	base := url.Values{}
	for k, v := range map[string]string{"rule": f.Rule, "severity": f.Severity, "cluster": f.Cluster, "namespace": f.Namespace, "state": f.State} {
		if v != "" {
			base.Set(k, v)
		}
	}
	for _, c := range sel.ByRule {
		d.ByRule = append(d.ByRule, tally{Label: c.Label, N: c.N, Href: "?" + with(base, "rule", c.Label)})
	}
	for _, c := range sel.ByNS {
		cluster, ns, _ := strings.Cut(c.Label, "/")
		v := mustParse(with(base, "cluster", cluster))
		d.ByNS = append(d.ByNS, tally{Label: c.Label, N: c.N, Href: "?" + with(v, "namespace", ns)})
	}
	d.Total = sel.Total
	pages := max(1, (sel.Total+PerPage-1)/PerPage)
	if pageNo > pages { // past the last page: the last one
		pageNo = pages
		from, to = (pageNo-1)*PerPage, pageNo*PerPage
		sel, _ = p.findingsIx.Select(f, from, to)
	}
	d.First, d.Last = from+1, min(to, sel.Total)
	if pageNo > 1 {
		d.Prev = "?" + with(base, "page", strconv.Itoa(pageNo-1))
	}
	if pageNo < pages {
		d.Next = "?" + with(base, "page", strconv.Itoa(pageNo+1))
	}
	evs, err := sel.Events(r.Context(), p.src.Store)
	if err != nil {
		d.Problem = err.Error() // what could be read is shown
	}
	for _, ev := range evs {
		d.Rows = append(d.Rows, findingRow{FindingEvent: ev, Path: workloadPath(ev.Workload.Cluster, ev.Workload.Namespace, ev.Workload.Kind, ev.Workload.Name)})
	}
	p.render(w, code, "findings", page{Title: "Findings", Nav: "findings", Data: d})
}
