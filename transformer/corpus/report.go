package corpus

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Figures are one corpus's results.
type Figures struct {
	Corpus string
	Cases  int
	Right  int
	// Serving confusion counts, over the cases that state serving.
	TP, FP, FN, TN int
	// Per field: cases stating it, and those right on it.
	Stated map[string]int
	Held   map[string]int
	// Known misses of bomstream, table errors set aside, unexpected
	// misses and stale known entries.
	KnownMisses, TableErrors, Unexpected, Stale int
}

// Tally counts the judged cases of one corpus.
func Tally(corpus string, js []Judged) Figures {
	f := Figures{Corpus: corpus, Stated: map[string]int{}, Held: map[string]int{}}
	for _, j := range js {
		f.Cases++
		if j.Right() {
			f.Right++
		}
		for _, field := range j.Stated {
			f.Stated[field]++
			excused := slices.ContainsFunc(j.Excused, func(k Known) bool { return k.Field == field })
			if !j.Missed(field) || excused {
				f.Held[field]++
			}
		}
		if e := j.Case.Expect.Serving; e != nil {
			served := j.Served
			if slices.ContainsFunc(j.Excused, func(k Known) bool { return k.Field == FieldServing }) {
				served = *e // the table is wrong: bomstream's answer is the right one
			}
			switch {
			case *e && served:
				f.TP++
			case *e && !served:
				f.FN++
			case !*e && served:
				f.FP++
			default:
				f.TN++
			}
		}
		f.KnownMisses += len(j.KnownMisses)
		f.TableErrors += len(j.Excused)
		f.Unexpected += len(j.Unexpected)
		f.Stale += len(j.Stale)
	}
	return f
}

// Failed reports whether the corpus fails: an unexpected miss or a stale
// known entry.
func (f Figures) Failed() bool { return f.Unexpected > 0 || f.Stale > 0 }

func pct(n, d int) string {
	if d == 0 {
		return "   -  "
	}
	return fmt.Sprintf("%5.1f%%", 100*float64(n)/float64(d))
}

// Report writes the figures of each corpus as a table, then the cases
// that miss, unexpected ones first.
func Report(w io.Writer, figs []Figures, judged map[string][]Judged) {
	fmt.Fprintf(w, "%-10s %6s %14s %9s %9s", "corpus", "cases", "right", "serving P", "serving R")
	for _, field := range Fields[1:] {
		fmt.Fprintf(w, " %14s", field)
	}
	fmt.Fprintln(w)
	for _, f := range figs {
		fmt.Fprintf(w, "%-10s %6d %6d %s %9s %9s", f.Corpus, f.Cases, f.Right, pct(f.Right, f.Cases),
			pct(f.TP, f.TP+f.FP), pct(f.TP, f.TP+f.FN))
		for _, field := range Fields[1:] {
			fmt.Fprintf(w, " %3d/%-3d %s", f.Held[field], f.Stated[field], strings.TrimSpace(pct(f.Held[field], f.Stated[field])))
		}
		fmt.Fprintf(w, "\n%10s known misses %d, table errors %d, unexpected %d, stale %d\n", "", f.KnownMisses, f.TableErrors, f.Unexpected, f.Stale)
	}
	for _, f := range figs {
		for _, j := range judged[f.Corpus] {
			for _, m := range j.Unexpected {
				fmt.Fprintf(w, "UNEXPECTED %s %s: %s\n    got: %s\n", f.Corpus, j.Case.ID(), m, j.Got)
			}
			if j.LoadErr != nil {
				fmt.Fprintf(w, "note       %s %s: %v\n", f.Corpus, j.Case.ID(), j.LoadErr)
			}
			for _, k := range j.Stale {
				fmt.Fprintf(w, "STALE      %s %s: %s no longer misses; remove it from known.yaml\n", f.Corpus, j.Case.ID(), k.Field)
			}
		}
	}
	for _, f := range figs {
		for _, j := range judged[f.Corpus] {
			for _, k := range j.KnownMisses {
				fmt.Fprintf(w, "known miss %s %s: %s: %s\n", f.Corpus, j.Case.ID(), k.Field, k.Reason)
			}
			for _, k := range j.Excused {
				fmt.Fprintf(w, "table err  %s %s: %s: %s\n", f.Corpus, j.Case.ID(), k.Field, k.Reason)
			}
		}
	}
}
