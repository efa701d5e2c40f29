package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bomstream/bomstream/schemas"
)

// Findings writes the findings as a table, JSON (an array of events)
// or CSV.
func Findings(out io.Writer, format string, list []schemas.FindingEvent) error {
	switch format {
	case "json":
		if list == nil {
			list = []schemas.FindingEvent{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	case "csv":
		w := csv.NewWriter(out)
		_ = w.Write([]string{"cluster", "namespace", "kind", "name", "rule", "severity", "state", "subject", "since", "change", "reason", "message"})
		for _, ev := range list {
			_ = w.Write([]string{ev.Workload.Cluster, ev.Workload.Namespace, ev.Workload.Kind, ev.Workload.Name, ev.Rule, ev.Severity,
				ev.State, ev.Subject, Stamp(ev.Time), fmt.Sprint(ev.ChangeSeq), ev.Reason, ev.Message})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tRULE\tSEVERITY\tSTATE\tSINCE\tSUBJECT")
	for _, ev := range list {
		state := ev.State
		if ev.Reason != "" {
			state += " (" + ev.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ev.Workload, ev.Rule, ev.Severity, state, Stamp(ev.Time), ev.Subject)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d findings\n", len(list))
	return err
}
