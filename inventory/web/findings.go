package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// openFindings keeps the number of open findings per workload
// (cluster/uid) and counts again only when FINDINGS has moved: drawing a
// page of the inventory costs one stream lookup, whatever its size.
type openFindings struct {
	bus *stream.Bus
	mu  sync.Mutex
	seq uint64 // FINDINGS' last sequence when counted
	n   map[string]int
}

func (o *openFindings) counts(ctx context.Context) (map[string]int, error) {
	s, err := o.bus.Stream(ctx, schemas.StreamFindings)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil // no findings stage has run: nothing is open
	}
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("findings: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n != nil && o.seq == info.State.LastSeq {
		return o.n, nil
	}
	open, err := findings.List(ctx, o.bus, findings.Filter{})
	if err != nil {
		return nil, err
	}
	n := make(map[string]int, len(open))
	for _, ev := range open {
		n[ev.Workload.Cluster+"/"+ev.Workload.UID]++
	}
	o.n, o.seq = n, info.State.LastSeq
	return n, nil
}

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
// counts by rule and by namespace.
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
	all, err := findings.List(r.Context(), p.src.Bus, f)
	code := http.StatusOK
	switch {
	case err != nil && f.Validate() != nil:
		d.Problem, code = err.Error(), http.StatusBadRequest
	case errors.Is(err, jetstream.ErrStreamNotFound):
		d.Problem = "No findings stage has run on this stream yet."
	case err != nil:
		d.Problem = err.Error() // what could be read is shown
	}
	base := url.Values{}
	for k, v := range map[string]string{"rule": f.Rule, "severity": f.Severity, "cluster": f.Cluster, "namespace": f.Namespace, "state": f.State} {
		if v != "" {
			base.Set(k, v)
		}
	}
	byRule, byNS := map[string]int{}, map[string]int{}
	for _, ev := range all {
		byRule[ev.Rule]++
		byNS[ev.Workload.Cluster+"/"+ev.Workload.Namespace]++
	}
	for _, k := range sortedKeys(byRule) {
		d.ByRule = append(d.ByRule, tally{Label: k, N: byRule[k], Href: "?" + with(base, "rule", k)})
	}
	for _, k := range sortedKeys(byNS) {
		cluster, ns, _ := strings.Cut(k, "/")
		v := mustParse(with(base, "cluster", cluster))
		d.ByNS = append(d.ByNS, tally{Label: k, N: byNS[k], Href: "?" + with(v, "namespace", ns)})
	}
	d.Total = len(all)
	pages := max(1, (len(all)+PerPage-1)/PerPage)
	pageNo = min(pageNo, pages)
	from, to := (pageNo-1)*PerPage, min(pageNo*PerPage, len(all))
	d.First, d.Last = from+1, to
	if pageNo > 1 {
		d.Prev = "?" + with(base, "page", strconv.Itoa(pageNo-1))
	}
	if pageNo < pages {
		d.Next = "?" + with(base, "page", strconv.Itoa(pageNo+1))
	}
	for _, ev := range all[from:to] {
		d.Rows = append(d.Rows, findingRow{FindingEvent: ev, Path: workloadPath(ev.Workload.Cluster, ev.Workload.Namespace, ev.Workload.Kind, ev.Workload.Name)})
	}
	p.render(w, code, "findings", page{Title: "Findings", Nav: "findings", Data: d})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
