package inventory

import (
	"fmt"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
)

// Runtime is one serving engine a BOM names.
type Runtime struct {
	Name       string `json:"name"`    // the rules' name: vllm, sglang, tgi, ...
	Version    string `json:"version"` // "" when the BOM gives none
	Confidence string `json:"confidence"`
}

// Model is one model a BOM names.
type Model struct {
	ID         string   `json:"id"` // a Hugging Face id, a path, a URI
	Revisions  []string `json:"revisions,omitempty"`
	Unpinned   bool     `json:"unpinned"`
	Confidence string   `json:"confidence"`
}

// Image is one container image a BOM names.
type Image struct {
	Ref        string   `json:"ref"`               // registry/repository[:tag][@digest]
	Digests    []string `json:"digests,omitempty"` // sha256:..., when resolved
	Confidence string   `json:"confidence"`
}

// Facts are the parts of a BOM the index keeps: its runtimes, models and
// images, in the BOM's order.
type Facts struct {
	Runtimes []Runtime `json:"runtimes"`
	Models   []Model   `json:"models"`
	Images   []Image   `json:"images"`
}

// bomDoc is the little of a CycloneDX document ReadFacts looks at; the
// decoder skips the rest (evidence, dependencies, purls).
type bomDoc struct {
	Components []struct {
		BOMRef     string `json:"bom-ref"`
		Type       string `json:"type"`
		Name       string `json:"name"`
		Version    string `json:"version"`
		Properties []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"properties"`
	} `json:"components"`
}

const prop = "bomstream:"

// ReadFacts reads the facts of a BOM rendered by the transformer (see
// transformer.SummaryOf, which reads the same properties). It uses the
// encoding/json/v2 decoder, as the stream's readers do: the index reads
// every BOM of the stream at start.
func ReadFacts(bom []byte) (Facts, error) {
	var doc bomDoc
	if err := jsonv2.Unmarshal(bom, &doc); err != nil {
		return Facts{}, fmt.Errorf("read bom: %w", err)
	}
	var f Facts
	for _, c := range doc.Components {
		switch {
		case strings.HasPrefix(c.BOMRef, "runtime:"):
			rt := Runtime{Name: c.Name, Version: c.Version}
			for _, p := range c.Properties {
				switch p.Name {
				case prop + "runtime:name":
					rt.Name = p.Value
				case prop + "runtime:confidence":
					rt.Confidence = p.Value
				}
			}
			f.Runtimes = append(f.Runtimes, rt)
		case c.Type == "machine-learning-model":
			m := Model{ID: c.Name}
			for _, p := range c.Properties {
				switch p.Name {
				case prop + "model:revision", prop + "model:digest":
					m.Revisions = append(m.Revisions, p.Value)
				case prop + "model:unpinned":
					m.Unpinned = p.Value == "true"
				case prop + "confidence":
					m.Confidence = p.Value
				}
			}
			f.Models = append(f.Models, m)
		case c.Type == "container":
			im := Image{Ref: strings.TrimPrefix(c.BOMRef, "container:")}
			for _, p := range c.Properties {
				switch {
				case p.Name == prop+"image:digest" && p.Value != "unresolved":
					im.Digests = append(im.Digests, p.Value)
				case p.Name == prop+"confidence":
					im.Confidence = p.Value
				}
			}
			f.Images = append(f.Images, im)
		}
	}
	return f, nil
}
