package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/transformer"
)

type renderOptions struct {
	path     string
	out      string
	cluster  string
	rules    string
	profiles string
	limits   manifest.Limits
}

func renderCmd() *cobra.Command {
	var o renderOptions
	c := &cobra.Command{
		Use:   "render -f FILE|DIR [-o DIR]",
		Short: "Render AI-BOMs from manifests, with no cluster and no stream",
		Example: `  bomstream render -f deploy/vllm.yaml
  bomstream render -f manifests/ -o boms/
  bomstream render -f manifests/ --rules my-rules.yaml --profiles my-profiles.yaml`,
		Long: `render reads Kubernetes manifests (multi-document YAML, kind: List, JSON,
directories recursively) and renders a CycloneDX 1.6 AI-BOM for every
model-serving workload, exactly as the pipeline would.

With -o DIR it writes one <namespace>_<kind>_<name>.cdx.json per BOM into DIR
and prints a summary line per workload on stdout; without -o the BOMs go to
stdout (one JSON document after the other) and the summary to stderr.

Only regular files are read: named pipes, devices and sockets are skipped
with a note, as are files over --max-file-bytes and the documents of a file
past --max-documents.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return render(o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVarP(&o.path, "file", "f", "", "manifest file or directory (required)")
	f.StringVarP(&o.out, "output", "o", "", "directory to write .cdx.json files into")
	f.StringVar(&o.cluster, "cluster", "default", "cluster name recorded in the BOMs")
	f.StringVar(&o.rules, "rules", "", "YAML file that extends or overrides the detection rules")
	f.StringVar(&o.profiles, "profiles", "", "YAML file that extends or overrides the kind profiles")
	f.Int64Var(&o.limits.MaxFileBytes, "max-file-bytes", manifest.DefaultMaxFileBytes, "skip manifest files larger than this")
	f.IntVar(&o.limits.MaxDocuments, "max-documents", manifest.DefaultMaxDocuments, "read at most this many documents of one file")
	_ = c.MarkFlagRequired("file")
	return c
}

func render(o renderOptions, stdout, stderr io.Writer) error {
	if o.limits.MaxFileBytes <= 0 {
		return fmt.Errorf("render --max-file-bytes: %d is not a positive size", o.limits.MaxFileBytes)
	}
	if o.limits.MaxDocuments <= 0 {
		return fmt.Errorf("render --max-documents: %d is not a positive count", o.limits.MaxDocuments)
	}
	n, err := collector.NewNormalizer(collector.Config{Cluster: o.cluster, ProfilesFile: o.profiles})
	if err != nil {
		return err
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: process.Version(), RulesFile: o.rules})
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.path); err != nil {
		return fmt.Errorf("render -f: %w", err)
	}
	root := o.path
	if fi, _ := os.Stat(o.path); !fi.IsDir() {
		root = filepath.Dir(o.path)
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("render -o: %w", err)
		}
	}
	summary := stdout
	if o.out == "" {
		summary = stderr
	}
	loaded := files.LoadWith(root, o.path, n, o.limits)
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
		if o.out == "" {
			if _, err := stdout.Write(append(res.BOM, '\n')); err != nil {
				return err
			}
			continue
		}
		name := strings.Join([]string{safe(w.Namespace), safe(w.Kind), safe(w.Name)}, "_") + ".cdx.json"
		if err := os.WriteFile(filepath.Join(o.out, name), res.BOM, 0o644); err != nil {
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
	line := process.RuntimesText(s)
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
