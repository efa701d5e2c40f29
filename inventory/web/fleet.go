package web

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/web/chart"
)

// MaxBars is the number of bars a fleet chart draws; the rest are summed.
const MaxBars = 15

// figure is one chart and the table of its figures (the same numbers,
// for screen readers and for copying).
type figure struct {
	Title string
	Chart template.HTML
	Rows  []chart.Bar
}

type fleetData struct {
	Serving, Clusters int
	Figures           []figure
	Days              figure
}

// fleetCache keeps the figures of the fleet page for the index's last
// BOMS sequence: they change only when the index does.
type fleetCache struct {
	mu  sync.Mutex
	seq uint64
	d   *fleetData
}

// fleet counts the workloads serving now by runtime and version, by model
// and by cluster, and the changes of every day.
func (p *Pages) fleet(w http.ResponseWriter, _ *http.Request) {
	seq := p.src.Index.Stats().LastSeq
	p.fleetCache.mu.Lock()
	d := p.fleetCache.d
	if d == nil || p.fleetCache.seq != seq {
		d = p.fleetFigures()
		p.fleetCache.d, p.fleetCache.seq = d, seq
	}
	p.fleetCache.mu.Unlock()
	p.render(w, http.StatusOK, "fleet", page{Title: "Fleet", Nav: "fleet", Data: d})
}

// fleetFigures draws the fleet page's charts from the index.
func (p *Pages) fleetFigures() *fleetData {
	all := p.src.Index.Find(inventory.Query{})
	byRuntime, byModel, byCluster := map[string]int{}, map[string]int{}, map[string]int{}
	rtHref, modelHref := map[string]string{}, map[string]string{}
	for i := range all {
		e := &all[i]
		byCluster[e.Cluster]++
		for _, rt := range e.Runtimes {
			label := strings.TrimSpace(rt.Name + " " + rt.Version)
			byRuntime[label]++
			rng := rt.Name
			if rt.Version != "" {
				rng += "==" + rt.Version
			}
			rtHref[label] = "/?" + url.Values{"runtime": {rng}}.Encode()
		}
		for _, m := range e.Models {
			byModel[m.ID]++
			if !strings.ContainsAny(m.ID, "*?[") {
				modelHref[m.ID] = "/?" + url.Values{"model": {m.ID}}.Encode()
			}
		}
	}
	bars := func(counts map[string]int, href func(string) string) []chart.Bar {
		out := make([]chart.Bar, 0, len(counts))
		for k, n := range counts {
			out = append(out, chart.Bar{Label: k, Value: n, Href: href(k)})
		}
		slices.SortFunc(out, func(a, b chart.Bar) int {
			if a.Value != b.Value {
				return b.Value - a.Value
			}
			return strings.Compare(a.Label, b.Label)
		})
		return out
	}
	d := fleetData{Serving: len(all), Clusters: len(byCluster)}
	add := func(title, desc string, b []chart.Bar) {
		d.Figures = append(d.Figures, figure{Title: title, Chart: chart.Bars(title, desc, b, MaxBars), Rows: b})
	}
	add("Workloads by runtime and version", "How many serving workloads run each runtime version.",
		bars(byRuntime, func(k string) string { return rtHref[k] }))
	add("Workloads by model", "How many serving workloads serve each model.",
		bars(byModel, func(k string) string { return modelHref[k] }))
	add("Workloads by cluster", "How many serving workloads each cluster runs.",
		bars(byCluster, func(k string) string { return "/?" + url.Values{"cluster": {k}}.Encode() }))
	perDay := p.src.Index.ChangesPerDay()
	days := make([]time.Time, 0, len(perDay))
	for day := range perDay {
		days = append(days, day)
	}
	slices.SortFunc(days, time.Time.Compare)
	points := make([]chart.Point, len(days))
	rows := make([]chart.Bar, len(days))
	for i, day := range days {
		points[i] = chart.Point{Day: day, Value: perDay[day]}
		rows[i] = chart.Bar{Label: day.Format(time.DateOnly), Value: perDay[day]}
	}
	d.Days = figure{Title: "Changes per day", Rows: rows,
		Chart: chart.Days("Changes per day", "The number of versions (BOMs and tombstones) observed each day, across the fleet.", points)}
	return &d
}
