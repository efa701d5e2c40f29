package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/transformer"
)

// RenderOptions are the flags of bomstream render.
type RenderOptions struct {
	Path     string          // a manifest file or directory
	Out      string          // the directory to write .cdx.json files into; "" for stdout
	Cluster  string          // the cluster name recorded in the BOMs
	Rules    string          // a file that extends or overrides the detection rules
	Profiles string          // a file that extends or overrides the kind profiles
	Limits   manifest.Limits // what the manifest reader reads of a file
}

// Render renders the AI-BOM of every serving workload in the manifests at
// o.Path (bomstream render), with no cluster and no stream, exactly as the
// pipeline would. Without o.Out the BOMs go to stdout, one document after
// the other, and the summary to stderr; with it, a file each in o.Out and
// the summary to stdout.
func Render(o RenderOptions, stdout, stderr io.Writer) error {
	if o.Limits.MaxFileBytes <= 0 {
		return fmt.Errorf("render --max-file-bytes: %d is not a positive size", o.Limits.MaxFileBytes)
	}
	if o.Limits.MaxDocuments <= 0 {
		return fmt.Errorf("render --max-documents: %d is not a positive count", o.Limits.MaxDocuments)
	}
	n, err := collector.NewNormalizer(collector.Config{Cluster: o.Cluster, ProfilesFile: o.Profiles})
	if err != nil {
		return err
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: Version(), RulesFile: o.Rules})
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.Path); err != nil {
		return fmt.Errorf("render -f: %w", err)
	}
	root := o.Path
	if fi, _ := os.Stat(o.Path); !fi.IsDir() {
		root = filepath.Dir(o.Path)
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return fmt.Errorf("render -o: %w", err)
		}
	}
	summary := stdout
	if o.Out == "" {
		summary = stderr
	}
	loaded := files.LoadWith(root, o.Path, n, o.Limits)
	for _, note := range loaded.Skipped {
		fmt.Fprintf(stderr, "skipped: %s\n", note)
	}
	for _, note := range loaded.Notes {
		fmt.Fprintf(stderr, "note: %s\n", note)
	}
	var errs []error
	if loaded.Err != nil {
		errs = append(errs, loaded.Err)
	}
	boms := 0
	for _, ev := range loaded.Events {
		res, err := r.Render(ev)
		if err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", ev.Subject, err))
			continue
		}
		w := ev.Data.Workload
		if res.BOM == nil {
			fmt.Fprintf(summary, "%-48s no BOM: %s\n", w.Kind+"/"+w.Name, res.Skipped)
			continue
		}
		boms++
		fmt.Fprintf(summary, "%-48s %s\n", w.Kind+"/"+w.Name, summaryLine(res.Summary))
		if o.Out == "" {
			if _, err := stdout.Write(append(res.BOM, '\n')); err != nil {
				return err
			}
			continue
		}
		name := strings.Join([]string{safe(w.Namespace), safe(w.Kind), safe(w.Name)}, "_") + ".cdx.json"
		if err := os.WriteFile(filepath.Join(o.Out, name), res.BOM, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("write bom of %s: %w", ev.Subject, err))
		}
	}
	fmt.Fprintf(summary, "%d workloads, %d BOMs, %d notes", len(loaded.Events), boms, len(loaded.Notes))
	if len(loaded.Skipped) > 0 {
		fmt.Fprintf(summary, ", %d skipped", len(loaded.Skipped))
	}
	fmt.Fprintln(summary)
	return errors.Join(errs...)
}

// summaryLine is "vllm@0.8.5 (declared)  models: a, b  roles: leader, worker".
func summaryLine(s transformer.Summary) string {
	line := RuntimesText(s)
	if len(s.Models) > 0 {
		line += "  models: " + strings.Join(s.Models, ", ")
	}
	if len(s.Roles) > 0 {
		line += "  roles: " + strings.Join(s.Roles, ", ")
	}
	return line
}

func safe(s string) string {
	if s == "" {
		return "_"
	}
	return strings.NewReplacer("/", "-", "\\", "-", "..", "-").Replace(s)
}
