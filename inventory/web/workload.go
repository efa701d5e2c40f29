package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/inventory/bomview"
	"github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
)

// step is one version on a workload's timeline.
type step struct {
	Seq       uint64
	Time      time.Time
	State     string // serving, deleted, not-serving
	Label     string // first seen, changed, re-rendered, deleted, not serving, revived
	Changes   []string
	Href      string // the page showing this version
	DiffHref  string // the diff with the BOM before it
	Raw       string // the raw CycloneDX
	Selected  bool
	Tombstone bool
}

type workloadData struct {
	ID       schemas.Workload
	Path     string
	Current  inventory.Entry
	Selected step
	// Shown is the version whose BOM is shown: the selected one, or for a
	// tombstone the last BOM before it.
	Shown       step
	View        *bomview.View
	ViewProblem string
	Timeline    []step
	Choices     []step // the BOM versions, for the diff form
	From, To    uint64
	Diff        *bomview.Diff
	DiffProblem string
	Located     []Located
	LocProblem  string
	HasLocator  bool
	// Findings are the workload's open findings.
	Findings        []schemas.FindingEvent
	FindingsProblem string
}

func (p *Pages) workload(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	if ns == "-" {
		ns = ""
	}
	key := r.PathValue("cluster") + "/" + r.PathValue("ns") + "/" + r.PathValue("kind") + "/" + r.PathValue("name")
	wl, ok := p.src.Index.Workload(r.PathValue("cluster"), ns, r.PathValue("kind"), r.PathValue("name"))
	if !ok || len(wl.Versions) == 0 {
		p.fail(w, http.StatusNotFound, "inventory", fmt.Errorf("workload %s is not in the inventory", key))
		return
	}
	path := workloadPath(wl.ID.Cluster, wl.ID.Namespace, wl.ID.Kind, wl.ID.Name)
	d := workloadData{ID: wl.ID, Path: path, HasLocator: p.src.Locate != nil}
	d.Current, _ = wl.EntryAt(time.Time{})
	q := r.URL.Query()
	sel := len(wl.Versions) - 1
	if v := q.Get("version"); v != "" {
		i, err := versionIndex(wl, v)
		if err != nil {
			p.fail(w, http.StatusNotFound, "inventory", fmt.Errorf("workload %s: %w", key, err))
			return
		}
		sel = i
	}
	d.Timeline = timeline(wl, path)
	d.Timeline[sel].Selected = true
	d.Selected = d.Timeline[sel]
	shown := sel
	for shown > 0 && wl.Versions[shown].Tombstone != "" {
		shown--
	}
	d.Shown = d.Timeline[shown]
	for _, s := range d.Timeline {
		if !s.Tombstone {
			d.Choices = append(d.Choices, s)
		}
	}
	ctx := r.Context()
	if wl.Versions[shown].Tombstone == "" {
		v, err := p.view(ctx, wl.Versions[shown])
		if err != nil {
			d.ViewProblem = err.Error()
		} else {
			d.View = &v
		}
	}
	d.From, d.To, d.DiffProblem = diffParams(q, wl)
	if d.DiffProblem == "" && d.From != 0 && d.To != 0 {
		diff, err := p.diff(ctx, wl, d.From, d.To)
		if err != nil {
			d.DiffProblem = err.Error()
		} else {
			d.Diff = &diff
		}
	}
	switch open, err := findings.OpenFor(ctx, p.src.Bus, []schemas.Workload{wl.ID}); {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		d.FindingsProblem = "Findings are not shown: " + err.Error()
	case len(open) == 1:
		d.Findings = open[0].Findings
	}
	if p.src.Locate != nil {
		loc, err := p.src.Locate(ctx, wl.ID, wl.Versions[sel], sel == len(wl.Versions)-1)
		if err != nil {
			d.LocProblem = err.Error()
		}
		d.Located = loc
	}
	p.render(w, http.StatusOK, "workload", page{Title: wl.ID.Kind + " " + wl.ID.Name, Nav: "inventory", Data: d})
}

// diffParams reads from= and to=, the versions to compare; without them,
// the last change (lastChange).
func diffParams(q url.Values, wl inventory.Workload) (from, to uint64, problem string) {
	if !q.Has("from") && !q.Has("to") {
		from, to = lastChange(wl)
		return from, to, ""
	}
	for name, dst := range map[string]*uint64{"from": &from, "to": &to} {
		n, err := strconv.ParseUint(q.Get(name), 10, 64)
		if err != nil {
			problem = fmt.Sprintf("%s %q: not a change sequence", name, q.Get(name))
		}
		*dst = n
	}
	return from, to, problem
}

// versionIndex finds the version whose change sequence is v.
func versionIndex(wl inventory.Workload, v string) (int, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err == nil {
		for i := range wl.Versions {
			if wl.Versions[i].ChangeSeq == n {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("no version %q", v)
}

// lastChange is the pair of BOM versions the page compares when it is not
// asked: the last BOM whose hash differs from the BOM before it, and that
// one (0, 0 when no BOM ever changed).
func lastChange(wl inventory.Workload) (from, to uint64) {
	var next *inventory.Version // the BOM after the one looked at
	for i := len(wl.Versions) - 1; i >= 0; i-- {
		v := &wl.Versions[i]
		if v.Tombstone != "" {
			continue
		}
		if next != nil && next.BomHash != v.BomHash {
			return v.ChangeSeq, next.ChangeSeq
		}
		next = v
	}
	return 0, 0
}

// timeline is the workload's versions in change order, each with what it
// changed from the BOM before it (from the index's facts: no body read).
func timeline(wl inventory.Workload, path string) []step {
	out := make([]step, len(wl.Versions))
	var prevBOM *inventory.Version
	for i := range wl.Versions {
		v := &wl.Versions[i]
		s := step{Seq: v.ChangeSeq, Time: v.Time, State: v.State(), Tombstone: v.Tombstone != "",
			Href: path + "?version=" + strconv.FormatUint(v.ChangeSeq, 10)}
		switch {
		case v.Tombstone == inventory.StateDeleted:
			s.Label = "deleted"
		case v.Tombstone != "":
			s.Label = "not serving"
		case prevBOM == nil:
			s.Label = "first seen"
		case i > 0 && wl.Versions[i-1].Tombstone != "":
			s.Label = "revived"
		default:
			s.Label = "changed"
		}
		if v.Tombstone == "" {
			s.Raw = apiBOMPath(wl.ID.Cluster, wl.ID.Namespace, wl.ID.Kind, wl.ID.Name, v.ChangeSeq)
			if prevBOM != nil {
				s.Changes = changes(&prevBOM.Facts, &v.Facts)
				s.DiffHref = path + "?" + url.Values{"from": {strconv.FormatUint(prevBOM.ChangeSeq, 10)}, "to": {strconv.FormatUint(v.ChangeSeq, 10)}}.Encode() + "#diff"
				if len(s.Changes) == 0 && s.Label == "changed" {
					s.Label = "re-rendered" // the facts are the same; other fields of the BOM changed
				}
			}
			if v.Unreadable != "" {
				s.Changes = append(s.Changes, "facts unreadable: "+v.Unreadable)
			}
			prevBOM = v
		}
		out[i] = s
	}
	return out
}

// changes says in words what the index's facts show changed.
func changes(a, b *inventory.Facts) []string {
	var out []string
	rt := func(f *inventory.Facts) map[string]string {
		m := map[string]string{}
		for _, r := range f.Runtimes {
			m[r.Name] = r.Version
		}
		return m
	}
	out = append(out, compareMaps("runtime", rt(a), rt(b), "version")...)
	md := func(f *inventory.Facts) map[string]string {
		m := map[string]string{}
		for _, x := range f.Models {
			m[x.ID] = strings.Join(x.Revisions, ", ")
		}
		return m
	}
	out = append(out, compareMaps("model", md(a), md(b), "revision")...)
	im := func(f *inventory.Facts) map[string]string {
		m := map[string]string{}
		for _, x := range f.Images {
			ref, _, _ := strings.Cut(x.Ref, "@") // a digest in the reference is the image's digest, not its name
			m[ref] = strings.Join(x.Digests, ", ")
		}
		return m
	}
	return append(out, compareMaps("image", im(a), im(b), "digest")...)
}

func compareMaps(what string, a, b map[string]string, field string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(b)) {
		old, had := a[k]
		switch {
		case !had:
			out = append(out, what+" "+k+" added")
		case old != b[k]:
			out = append(out, fmt.Sprintf("%s %s %s %s → %s", what, k, field, orNone(old), orNone(b[k])))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[k]; !ok {
			out = append(out, what+" "+k+" removed")
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// view reads the BOM of version v from BOMS.
func (p *Pages) view(ctx context.Context, v inventory.Version) (bomview.View, error) {
	bom, err := api.ReadBOM(ctx, p.src.Bus.Reader(), v)
	if err != nil {
		return bomview.View{}, fmt.Errorf("the BOM of version %d: %w", v.ChangeSeq, err)
	}
	view, err := bomview.Read(bom)
	if err != nil {
		return bomview.View{}, fmt.Errorf("the BOM of version %d: %w", v.ChangeSeq, err)
	}
	return view, nil
}

// diff compares the BOMs of two versions.
func (p *Pages) diff(ctx context.Context, wl inventory.Workload, from, to uint64) (bomview.Diff, error) {
	var views [2]bomview.View
	for i, seq := range []uint64{from, to} {
		v, ok := wl.Version(seq)
		switch {
		case !ok:
			return bomview.Diff{}, fmt.Errorf("no version %d", seq)
		case v.Tombstone != "":
			return bomview.Diff{}, fmt.Errorf("version %d is a tombstone (%s): it has no BOM to compare", seq, v.Tombstone)
		}
		view, err := p.view(ctx, v)
		if err != nil {
			return bomview.Diff{}, err
		}
		views[i] = view
	}
	return bomview.Compare(views[0], views[1]), nil
}
