package schemas

import "strings"

// BOMFacts are what the findings rules look at in one AI-BOM: its models,
// runtimes and images, as its components say them. A reader of a stored
// BOM reads them from its JSON (findings.ReadFacts); the transformer gives
// them with a BOM it renders (transformer.Result.Facts), in memory only,
// so that a stage of the same process need not read the JSON back. Both
// fill them through AddComponent, and say the same of the same BOM.
type BOMFacts struct {
	Models   []ModelFact
	Runtimes []RuntimeFact
	Images   []ImageFact
}

// ModelFact is a machine-learning-model component.
type ModelFact struct {
	Name         string // the model id, "Qwen/Qwen2.5-1.5B-Instruct"
	LocationKind string // huggingface, oci, s3, gcs, pvc, path, ...
	PURL         string
	Pinned       bool // a revision or a digest is pinned
	Licensed     bool // the component names a license
}

// RuntimeFact is a serving engine component.
type RuntimeFact struct {
	Name       string // bomstream:runtime:name, "vllm"
	Version    string
	Confidence string // declared, inferred
}

// ImageFact is a container component.
type ImageFact struct {
	Ref     string // the image reference as the BOM names it
	Digests []string
}

// FactComponent is one component of a BOM as the facts read it.
type FactComponent struct {
	BOMRef, Type, Name, Version, PURL string
	Licensed                          bool // its licenses list is not empty
	// Property gives the values of the bomstream property called
	// "bomstream:"+name, in BOM order.
	Property func(name string) []string
}

func (c FactComponent) first(name string) string {
	if v := c.Property(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// AddComponent adds what c says, when it is a model, a runtime or an
// image, to f.
func (f *BOMFacts) AddComponent(c FactComponent) {
	switch {
	case c.Type == "machine-learning-model":
		f.Models = append(f.Models, ModelFact{
			Name: c.Name, LocationKind: c.first("model:location-kind"), PURL: c.PURL,
			Pinned:   c.first("model:unpinned") != "true",
			Licensed: c.Licensed,
		})
	case strings.HasPrefix(c.BOMRef, "runtime:"):
		rt := RuntimeFact{Name: c.first("runtime:name"), Version: c.Version, Confidence: c.first("runtime:confidence")}
		if rt.Name == "" {
			rt.Name = strings.ToLower(c.Name)
		}
		f.Runtimes = append(f.Runtimes, rt)
	case c.Type == "container":
		img := ImageFact{Ref: strings.TrimPrefix(c.BOMRef, "container:")}
		for _, d := range c.Property("image:digest") {
			if d != "unresolved" && d != "" {
				img.Digests = append(img.Digests, d)
			}
		}
		f.Images = append(f.Images, img)
	}
}
