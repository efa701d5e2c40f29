package transformer_test

import (
	"encoding/json"
	"fmt"
	"log"
	"path/filepath"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/transformer"
)

// Render a manifest: the collector's normalizer turns the objects of a file
// into workload-change events, and a Renderer turns each into a CycloneDX
// AI-BOM, exactly as `bomstream render -f` and the pipeline do.
func ExampleRenderer_Render() {
	norm, err := collector.NewNormalizer(collector.Config{Cluster: "dev"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: "example"})
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join("..", "examples", "kserve-hf.yaml")
	loaded := files.LoadWith(filepath.Dir(path), path, norm, manifest.Limits{})
	for _, ev := range loaded.Events {
		res, err := r.Render(ev)
		if err != nil {
			log.Fatal(err)
		}
		w := ev.Data.Workload
		fmt.Printf("%s/%s in %s (a BOM: %t)\n", w.Kind, w.Name, w.Namespace, json.Valid(res.BOM))
		for _, rt := range res.Summary.Runtimes {
			fmt.Printf("  runtime %s, %s\n", rt.Name, rt.Confidence)
		}
		fmt.Printf("  models %v, roles %v\n", res.Summary.Models, res.Summary.Roles)
	}
	// Output:
	// InferenceService/summarizer in ml (a BOM: true)
	//   runtime kserve-huggingfaceserver, declared
	//   runtime vllm, inferred
	//   models [google-t5/t5-small], roles [predictor]
}
