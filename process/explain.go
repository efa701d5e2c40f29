package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/transformer"
)

// ExplainWriter prints explanations as text, or as JSON lines.
type ExplainWriter struct {
	Out  io.Writer
	JSON bool
}

// Write prints one explanation.
func (w ExplainWriter) Write(x transformer.Explanation) error {
	if !w.JSON {
		return x.WriteText(w.Out)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	_, err = w.Out.Write(append(b, '\n'))
	return err
}

// ExplainFiles explains every workload of the manifests at path (bomstream
// explain FILE|DIR), with the rules and profiles files when named; notes go
// to stderr.
func ExplainFiles(path, cluster, rules, profiles string, w ExplainWriter, stderr io.Writer) error {
	if cluster == "" {
		cluster = "default"
	}
	n, err := collector.NewNormalizer(collector.Config{Cluster: cluster, ProfilesFile: profiles})
	if err != nil {
		return err
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: Version(), RulesFile: rules})
	if err != nil {
		return err
	}
	root := path
	if fi, _ := os.Stat(path); !fi.IsDir() {
		root = filepath.Dir(path)
	}
	loaded := files.Load(root, path, n)
	for _, note := range loaded.Notes {
		fmt.Fprintf(stderr, "note: %s\n", note)
	}
	errs := []error{loaded.Err}
	for _, ev := range loaded.Events {
		x, err := r.Explain(ev)
		if err != nil {
			errs = append(errs, fmt.Errorf("explain %s: %w", ev.Subject, err))
			continue
		}
		if err := w.Write(x); err != nil {
			return err
		}
	}
	if len(loaded.Events) == 0 {
		fmt.Fprintf(stderr, "no workload in %s\n", path)
	}
	return errors.Join(errs...)
}
