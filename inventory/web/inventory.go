package web

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bomstream/bomstream/inventory"
)

// PerPage is the number of workloads on a page of the inventory.
const PerPage = 100

// column is a sortable column of the inventory.
type column struct {
	Key, Label string
	less       func(a, b *inventory.Entry) int
}

var columns = []column{
	{"cluster", "Cluster", func(a, b *inventory.Entry) int { return strings.Compare(a.Cluster, b.Cluster) }},
	{"namespace", "Namespace", func(a, b *inventory.Entry) int { return strings.Compare(a.Namespace, b.Namespace) }},
	{"kind", "Kind", func(a, b *inventory.Entry) int { return strings.Compare(a.Kind, b.Kind) }},
	{"name", "Name", func(a, b *inventory.Entry) int { return strings.Compare(a.Name, b.Name) }},
	{"runtime", "Runtime", func(a, b *inventory.Entry) int { return strings.Compare(runtimeText(a), runtimeText(b)) }},
	{"model", "Models", func(a, b *inventory.Entry) int { return strings.Compare(firstModel(a), firstModel(b)) }},
	{"confidence", "Confidence", func(a, b *inventory.Entry) int { return strings.Compare(confidence(a), confidence(b)) }},
	{"changed", "Last change", func(a, b *inventory.Entry) int { return a.LastChanged.Compare(b.LastChanged) }},
}

// filterField is one input of the filter form.
type filterField struct {
	Name, Label, Value, Hint string
}

var filterFields = []filterField{
	{Name: "model", Label: "Model", Hint: "id or glob: meta-llama/*"},
	{Name: "runtime", Label: "Runtime", Hint: "vllm<0.8.5, sglang>=0.4,<0.5"},
	{Name: "image", Label: "Image", Hint: "reference or glob"},
	{Name: "digest", Label: "Digest", Hint: "sha256:… (12+ hex digits)"},
	{Name: "cluster", Label: "Cluster"},
	{Name: "namespace", Label: "Namespace"},
	{Name: "kind", Label: "Kind", Hint: "Deployment, LeaderWorkerSet…"},
	{Name: "changed-since", Label: "Changed since", Hint: "2026-11-01 or 72h"},
	{Name: "at", Label: "As of", Hint: "a time or 24h (ago)"},
}

// row is one workload of the inventory page.
type row struct {
	Path, Cluster, Namespace, Kind, Name, State string
	Runtime, Confidence                         string
	Models                                      []string
	MoreModels, Findings                        int
	LastChanged                                 time.Time
}

// header is a column heading: its sort link and state.
type header struct {
	Label, Href, Sort string // Sort: ascending, descending or "" (aria-sort)
}

type inventoryData struct {
	Fields                []filterField
	State                 string
	Unpinned, Inferred    bool
	Findings              bool // with open findings only
	Headers               []header
	Rows                  []row
	Total, First, Last    int
	Prev, Next            string
	Page, Pages           int
	Problem, FindingsNote string
	Query                 string // the filters, for links that keep them
}

// query reads the filters of params: the names of inventory.Fields, empty
// values dropped (a form sends every input), "state=any" for all states.
func query(params url.Values) url.Values {
	out := url.Values{}
	for _, f := range inventory.Fields {
		for _, v := range params[f] {
			if v = strings.TrimSpace(v); v != "" {
				out.Add(f, v)
			}
		}
	}
	if out.Get("state") == "any" {
		out.Set("state", "all")
	}
	if params.Get("findings") == "true" { // find --findings: with open findings only
		out.Set("findings", "true")
	}
	return out
}

func (p *Pages) inventory(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	filters := query(params)
	d := inventoryData{Query: filters.Encode(), State: cmp.Or(filters.Get("state"), "serving"),
		Unpinned: filters.Get("unpinned") != "", Inferred: filters.Get("inferred-only") != "", Findings: filters.Get("findings") == "true"}
	for _, f := range filterFields {
		f.Value = strings.Join(filters[f.Name], ",")
		d.Fields = append(d.Fields, f)
	}
	sortKey := cmp.Or(params.Get("sort"), "name")
	desc := strings.HasPrefix(sortKey, "-")
	col := slices.IndexFunc(columns, func(c column) bool { return c.Key == strings.TrimPrefix(sortKey, "-") })
	code := http.StatusOK
	if col < 0 {
		d.Problem = fmt.Sprintf("sort %q: not a column (%s)", sortKey, columnKeys())
		code, col, desc, sortKey = http.StatusBadRequest, 3, false, "name"
	}
	pageNo := 1
	if v := params.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			d.Problem = fmt.Sprintf("page %q: not a page number", v)
			code = http.StatusBadRequest
		} else {
			pageNo = n
		}
	}
	d.Headers = headers(filters, sortKey)
	q, err := p.parse(filters, &d)
	if err != nil {
		d.Problem, code = err.Error(), http.StatusBadRequest
		p.render(w, code, "inventory", page{Title: "Inventory", Nav: "inventory", Data: d})
		return
	}
	var shown []inventory.Entry // the page's workloads
	view := mustParse(with(filters, "sort", sortKey))
	if sortKey == "name" {
		// The index answers in name order: only the page's entries are built.
		first := (max(pageNo, 1) - 1) * PerPage
		var total int
		shown, total = p.src.Index.FindPage(q, first, PerPage)
		if first >= total && total > 0 { // past the last page: the last one
			pageNo = (total + PerPage - 1) / PerPage
			shown, total = p.src.Index.FindPage(q, (pageNo-1)*PerPage, PerPage)
		}
		d.paginate(total, pageNo, view)
	} else {
		all := p.src.Index.Find(q)
		less := columns[col].less
		slices.SortStableFunc(all, func(a, b inventory.Entry) int {
			if desc {
				return less(&b, &a)
			}
			return less(&a, &b)
		})
		from, to := d.paginate(len(all), pageNo, view)
		shown = all[from:to]
	}
	for i := range shown {
		e := &shown[i]
		rw := row{Path: workloadPath(e.Cluster, e.Namespace, e.Kind, e.Name), Cluster: e.Cluster, Namespace: e.Namespace,
			Kind: e.Kind, Name: e.Name, State: e.State, Runtime: runtimeText(e), Confidence: confidence(e),
			LastChanged: e.LastChanged, Findings: p.findingsIx.OpenCount(e.Cluster, e.UID)}
		for j, m := range e.Models {
			if j == 3 {
				rw.MoreModels = len(e.Models) - 3
				break
			}
			rw.Models = append(rw.Models, modelText(m))
		}
		d.Rows = append(d.Rows, rw)
	}
	p.render(w, code, "inventory", page{Title: "Inventory", Nav: "inventory", Data: d})
}

// parse reads the query of filters; findings=true keeps the workloads
// with open findings, as find --findings does.
func (p *Pages) parse(filters url.Values, d *inventoryData) (inventory.Query, error) {
	fields := url.Values{}
	for k, v := range filters {
		if k != "findings" {
			fields[k] = v
		}
	}
	q, err := inventory.ParseQuery(fields, p.src.Now())
	if err != nil {
		return q, err
	}
	if !p.findingsIx.Loaded() {
		d.FindingsNote = "FINDINGS is still being read: open findings are not counted yet."
	}
	if d.Findings {
		q.Check = func(e *inventory.Entry) bool { return p.findingsIx.OpenCount(e.Cluster, e.UID) > 0 }
	}
	return q, nil
}

// headers are the column headings: each links to the view sorted by it,
// ascending, or descending when it is the ascending sort already.
func headers(filters url.Values, sortKey string) []header {
	var out []header
	for _, c := range columns {
		h := header{Label: c.Label, Href: "?" + with(filters, "sort", c.Key)}
		switch sortKey {
		case c.Key:
			h.Sort, h.Href = "ascending", "?"+with(filters, "sort", "-"+c.Key)
		case "-" + c.Key:
			h.Sort = "descending"
		}
		out = append(out, h)
	}
	return out
}

// paginate sets the counts and links of page pageNo of total workloads
// (a page past the last shows the last), links keeping view's
// parameters, and returns the slice of the page.
func (d *inventoryData) paginate(total, pageNo int, view url.Values) (from, to int) {
	d.Total = total
	d.Pages = max(1, (total+PerPage-1)/PerPage)
	d.Page = min(pageNo, d.Pages)
	from, to = (d.Page-1)*PerPage, min(d.Page*PerPage, total)
	d.First, d.Last = from+1, to
	if d.Page > 1 {
		d.Prev = "?" + with(view, "page", strconv.Itoa(d.Page-1))
	}
	if d.Page < d.Pages {
		d.Next = "?" + with(view, "page", strconv.Itoa(d.Page+1))
	}
	return from, to
}

// with is v's encoding with key set to value.
func with(v url.Values, key, value string) string {
	c := url.Values{}
	maps.Copy(c, v)
	c.Set(key, value)
	return c.Encode()
}

func mustParse(q string) url.Values {
	v, _ := url.ParseQuery(q) // q is an Encode result
	return v
}

func columnKeys() string {
	keys := make([]string, len(columns))
	for i, c := range columns {
		keys[i] = c.Key
	}
	return strings.Join(keys, ", ")
}

// runtimeText is "vllm 0.8.5", runtimes joined; "-" for none.
func runtimeText(e *inventory.Entry) string {
	var parts []string
	for _, rt := range e.Runtimes {
		parts = append(parts, strings.TrimSpace(rt.Name+" "+rt.Version))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func firstModel(e *inventory.Entry) string {
	if len(e.Models) == 0 {
		return ""
	}
	return e.Models[0].ID
}

// confidence is the runtime's confidence: declared (a field says what
// serves) or inferred (the image does); "-" when no runtime is named.
func confidence(e *inventory.Entry) string {
	if len(e.Runtimes) == 0 {
		return "-"
	}
	return e.Runtimes[0].Confidence
}

// modelText is the model id with its revision, or "(unpinned)".
func modelText(m inventory.Model) string {
	switch {
	case len(m.Revisions) > 0:
		return m.ID + "@" + m.Revisions[0]
	case m.Unpinned:
		return m.ID + " (unpinned)"
	}
	return m.ID
}
