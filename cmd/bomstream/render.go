package main

import (
	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/process"
)

// renderCmd renders BOMs from manifests (process.Render).
func renderCmd() *cobra.Command {
	var o process.RenderOptions
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
			return process.Render(o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Path, "file", "f", "", "manifest file or directory (required)")
	f.StringVarP(&o.Out, "output", "o", "", "directory to write .cdx.json files into")
	f.StringVar(&o.Cluster, "cluster", "default", "cluster name recorded in the BOMs")
	f.StringVar(&o.Rules, "rules", "", "YAML file that extends or overrides the detection rules")
	f.StringVar(&o.Profiles, "profiles", "", "YAML file that extends or overrides the kind profiles")
	f.Int64Var(&o.Limits.MaxFileBytes, "max-file-bytes", manifest.DefaultMaxFileBytes, "skip manifest files larger than this")
	f.IntVar(&o.Limits.MaxDocuments, "max-documents", manifest.DefaultMaxDocuments, "read at most this many documents of one file")
	_ = c.MarkFlagRequired("file")
	return c
}
