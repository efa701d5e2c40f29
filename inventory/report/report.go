package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/schemas"
)

// Formats are the output formats of Entries.
var Formats = []string{"table", "json", "csv"}

// CheckFormat says whether format is one of Formats, naming the flag.
func CheckFormat(format string) error {
	if slices.Contains(Formats, format) {
		return nil
	}
	return fmt.Errorf("--output %q: not table, json or csv", format)
}

// Entries prints workloads as a table, JSON (the items of the API's
// /api/v1/workloads) or CSV.
func Entries(out io.Writer, format string, es []inventory.Entry) error {
	switch format {
	case "json":
		if es == nil {
			es = []inventory.Entry{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(es)
	case "csv":
		w := csv.NewWriter(out)
		_ = w.Write([]string{"cluster", "namespace", "kind", "name", "uid", "state", "runtimes", "models", "unpinned", "images", "digests", "firstSeen", "lastChanged"})
		for _, e := range es {
			_ = w.Write([]string{e.Cluster, e.Namespace, e.Kind, e.Name, e.UID, e.State, Runtimes(e.Runtimes), strings.Join(models(e.Models), " "),
				strconv.FormatBool(unpinned(e.Models)), strings.Join(images(e.Images), " "), strings.Join(digests(e.Images), " "), Stamp(e.FirstSeen), Stamp(e.LastChanged)})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tNAMESPACE\tKIND\tNAME\tSTATE\tRUNTIME\tMODELS\tIMAGES\tLAST CHANGED")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Cluster, orDash(e.Namespace), e.Kind, e.Name, e.State,
			orDash(Runtimes(e.Runtimes)), orDash(strings.Join(models(e.Models), ", ")), orDash(strings.Join(images(e.Images), ", ")), Stamp(e.LastChanged))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d workloads\n", len(es))
	return err
}

// History prints a workload's versions, oldest first: when, change
// sequence, input and BOM hashes, runtimes and models, or the tombstone.
func History(out io.Writer, w schemas.Workload, vs []inventory.Version) error {
	fmt.Fprintf(out, "%s (uid %s)\n", w, w.UID)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCHANGE\tINPUT HASH\tBOM HASH\tRUNTIME\tMODELS")
	for _, v := range vs {
		if v.Tombstone != "" {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t%s\t-\n", Stamp(v.Time), v.ChangeSeq, Tombstone(v.Tombstone))
			continue
		}
		rt, ms := Runtimes(v.Runtimes), orDash(strings.Join(modelIDs(v.Models), ", "))
		switch {
		case v.Unreadable != "":
			rt, ms = "unreadable: "+v.Unreadable, "-"
		case rt == "":
			rt = "no runtime"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", Stamp(v.Time), v.ChangeSeq, Short(v.InputHash), Short(v.BomHash), rt, ms)
	}
	return tw.Flush()
}

// Summary prints the version of a workload in effect: its identity and
// state, then each runtime, model and image with what is known of it.
func Summary(out io.Writer, e inventory.Entry) error {
	w := schemas.Workload{Cluster: e.Cluster, Namespace: e.Namespace, Kind: e.Kind, Name: e.Name, UID: e.UID}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Workload:\t%s (uid %s)\n", w, e.UID)
	fmt.Fprintf(tw, "State:\t%s\n", e.State)
	fmt.Fprintf(tw, "First seen:\t%s\n", Stamp(e.FirstSeen))
	fmt.Fprintf(tw, "Last changed:\t%s (change %d)\n", Stamp(e.LastChanged), e.ChangeSeq)
	fmt.Fprintf(tw, "BOM hash:\t%s\n", orDash(e.BomHash))
	if e.Unreadable != "" {
		fmt.Fprintf(tw, "Unreadable:\t%s\n", e.Unreadable)
	}
	for _, r := range e.Runtimes {
		fmt.Fprintf(tw, "Runtime:\t%s\n", Runtimes([]inventory.Runtime{r}))
	}
	for _, m := range e.Models {
		rev := "revision " + strings.Join(m.Revisions, ", ")
		if len(m.Revisions) == 0 {
			rev = "no revision"
		}
		if m.Unpinned {
			rev += ", unpinned"
		}
		fmt.Fprintf(tw, "Model:\t%s (%s; %s)\n", m.ID, orDash(m.Confidence), rev)
	}
	for _, im := range e.Images {
		d := "digest " + strings.Join(im.Digests, ", ")
		if len(im.Digests) == 0 {
			d = "digest unresolved"
		}
		fmt.Fprintf(tw, "Image:\t%s (%s; %s)\n", im.Ref, orDash(im.Confidence), d)
	}
	return tw.Flush()
}

// Runtimes is how a table shows runtimes: "vllm@0.8.4 (declared), ...".
func Runtimes(rs []inventory.Runtime) string {
	var parts []string
	for _, r := range rs {
		s := r.Name
		if r.Version != "" {
			s += "@" + r.Version
		}
		parts = append(parts, s+" ("+r.Confidence+")")
	}
	return strings.Join(parts, ", ")
}

// Stamp prints a time exactly enough that `get --at` given the printed
// text finds that version: RFC 3339 in UTC with as many fractional digits
// as the time has.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Short is the first 12 hex digits of a sha256:<hex> hash.
func Short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Tombstone is how a tombstone's reason reads.
func Tombstone(reason string) string {
	if reason == schemas.TombstoneNotServing {
		return "not serving"
	}
	return reason
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func models(ms []inventory.Model) []string {
	var out []string
	for _, m := range ms {
		s := m.ID
		if len(m.Revisions) > 0 {
			s += "@" + Short(m.Revisions[0])
		}
		out = append(out, s)
	}
	return out
}

func modelIDs(ms []inventory.Model) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func unpinned(ms []inventory.Model) bool {
	for _, m := range ms {
		if m.Unpinned {
			return true
		}
	}
	return false
}

func images(is []inventory.Image) []string {
	var out []string
	for _, im := range is {
		out = append(out, im.Ref)
	}
	return out
}

func digests(is []inventory.Image) []string {
	var out []string
	for _, im := range is {
		out = append(out, im.Digests...)
	}
	return out
}
