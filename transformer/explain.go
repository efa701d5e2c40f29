package transformer

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// Explanation says why a workload is or is not serving, which runtimes and
// models were chosen, and every signal for and against each container with
// its weight and locator: what `bomstream explain` prints.
type Explanation struct {
	Workload  schemas.Workload `json:"workload"`
	Serving   bool             `json:"serving"`
	Reason    string           `json:"reason"`
	Threshold float64          `json:"threshold"`
	// Units are the containers, judged one by one.
	Units    []UnitExplanation  `json:"containers"`
	Runtimes []ClaimExplanation `json:"runtimes,omitempty"`
	Models   []ClaimExplanation `json:"models,omitempty"`
}

// UnitExplanation is one container: its signals and their sum.
type UnitExplanation struct {
	Container string              `json:"container"`
	Locator   string              `json:"locator"`
	Score     float64             `json:"score"`
	Serving   bool                `json:"serving"`
	Signals   []SignalExplanation `json:"signals"`
}

// SignalExplanation is one signal: its name, weight, what was seen and
// where, and the engine it names.
type SignalExplanation struct {
	Signal  string  `json:"signal"`
	Weight  float64 `json:"weight"`
	Value   string  `json:"value"`
	Locator string  `json:"locator"`
	Engine  string  `json:"engine,omitempty"`
}

// ClaimExplanation is a runtime or model the BOM lists, with its
// confidence and evidence.
type ClaimExplanation struct {
	Name       string   `json:"name"`
	Version    string   `json:"version,omitempty"`
	Confidence string   `json:"confidence"`
	Evidence   []string `json:"evidence"`
}

// Explain runs the rules over ev as Render does and tells why.
func (r *Renderer) Explain(ev schemas.WorkloadChange) (Explanation, error) {
	res, _, d, err := r.prepare(ev)
	e := Explanation{Workload: res.Workload, Threshold: r.rules.serving.threshold}
	if err != nil {
		return e, err
	}
	if d == nil && res.Skipped != SkipNothing && res.Skipped != SkipCache {
		e.Reason = res.Skipped
		return e, nil
	}
	if d == nil {
		d = r.rules.detect(ev.Data.Inputs, nil)
	}
	e.Serving = d.serving
	e.Reason = explainReason(d, res.Skipped)
	for _, u := range d.units {
		ue := UnitExplanation{Container: u.name, Locator: u.locator, Score: u.score, Serving: u.serving}
		for _, s := range d.signals(&u) {
			se := SignalExplanation{Signal: s.name, Weight: s.weight, Value: s.value(), Locator: s.locator()}
			if s.engine != nil {
				se.Engine = s.engine.Name
			}
			ue.Signals = append(ue.Signals, se)
		}
		e.Units = append(e.Units, ue)
	}
	if !d.serving {
		return e, nil
	}
	for _, re := range d.runtimes.entries {
		h := re.item
		best, _ := h.bestVersion()
		e.Runtimes = append(e.Runtimes, ClaimExplanation{Name: h.rule.Name, Version: best.version, Confidence: h.conf, Evidence: proofLines(h.proofs)})
	}
	for _, me := range d.models.entries {
		m := me.item
		e.Models = append(e.Models, ClaimExplanation{Name: m.name, Version: strings.Join(m.revisions.list(), ","), Confidence: m.conf, Evidence: proofLines(m.proofs)})
	}
	return e, nil
}

// explainReason says in a line why the workload serves or not.
func explainReason(d *detection, skipped string) string {
	switch {
	case skipped != "":
		return skipped
	case d.servingUnit():
		var names []string
		for _, u := range d.units {
			if u.serving {
				names = append(names, u.name)
			}
		}
		return "serves: container " + strings.Join(names, ", ") + " reaches the threshold"
	case d.runtimes.len() > 0:
		return "serves: its kind or a kind field names the engine"
	}
	return "serves: its kind serves by construction"
}

// proofLines are proofs as "value @ locator", sorted, once each.
func proofLines(ps proofs) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		l := p.value + " @ " + p.locator + " (" + p.conf + ")"
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// WriteText writes the explanation as people read it.
func (e Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	verdict := "NOT SERVING"
	if e.Serving {
		verdict = "SERVING"
	}
	fmt.Fprintf(&b, "%s %s: %s\n", e.Workload.Key(), verdict, e.Reason)
	for _, u := range e.Units {
		mark := "does not serve"
		if u.Serving {
			mark = "serves"
		}
		fmt.Fprintf(&b, "  container %s (%s): score %s of %s, %s\n", u.Container, u.Locator, num(u.Score), num(e.Threshold), mark)
		for _, s := range u.Signals {
			eng := ""
			if s.Engine != "" {
				eng = " [" + s.Engine + "]"
			}
			fmt.Fprintf(&b, "    %+6.2f %-16s %s%s @ %s\n", s.Weight, s.Signal, s.Value, eng, s.Locator)
		}
	}
	for _, group := range []struct {
		title string
		cs    []ClaimExplanation
	}{{"runtime", e.Runtimes}, {"model", e.Models}} {
		for _, c := range group.cs {
			v := ""
			if c.Version != "" {
				v = " " + c.Version
			}
			fmt.Fprintf(&b, "  %s %s%s (%s)\n", group.title, c.Name, v, c.Confidence)
			for _, ev := range c.Evidence {
				fmt.Fprintf(&b, "    %s\n", ev)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num formats a weight without trailing zeros.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
