package findings

import (
	"fmt"
	"net/url"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Facts are what the rules look at in one AI-BOM, read back from its
// CycloneDX JSON (the properties the transformer writes, see
// docs/ARCHITECTURE.md).
type Facts struct {
	Models   []Model
	Runtimes []Runtime
	Images   []Image
}

// Model is a machine-learning-model component.
type Model struct {
	Name         string // the model id, "Qwen/Qwen2.5-1.5B-Instruct"
	LocationKind string // huggingface, oci, s3, gcs, pvc, path, ...
	PURL         string
	Pinned       bool // a revision or a digest is pinned
	Licensed     bool // the component names a license
}

// Runtime is a serving engine component.
type Runtime struct {
	Name       string // bomstream:runtime:name, "vllm"
	Version    string
	Confidence string // declared, inferred
}

// Image is a container component.
type Image struct {
	Ref     string // the image reference as the BOM names it
	Digests []string
}

type property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type bomDoc struct {
	Components []struct {
		BOMRef     string           `json:"bom-ref"`
		Type       string           `json:"type"`
		Name       string           `json:"name"`
		Version    string           `json:"version"`
		PURL       string           `json:"purl"`
		Properties []property       `json:"properties"`
		Licenses   []jsontext.Value `json:"licenses"`
	} `json:"components"`
}

const prop = "bomstream:"

// readOptions read a BOM as encoding/json would (duplicate names and
// invalid UTF-8 let through), at about twice its speed.
var readOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// ReadFacts reads the facts of a BOM's JSON.
func ReadFacts(bom []byte) (Facts, error) {
	var doc bomDoc
	if err := jsonv2.Unmarshal(bom, &doc, readOptions); err != nil {
		return Facts{}, fmt.Errorf("read bom: %w", err)
	}
	var f Facts
	for _, c := range doc.Components {
		props := func(name string) (vals []string) {
			for _, p := range c.Properties {
				if p.Name == prop+name {
					vals = append(vals, p.Value)
				}
			}
			return vals
		}
		first := func(name string) string {
			if v := props(name); len(v) > 0 {
				return v[0]
			}
			return ""
		}
		switch {
		case c.Type == "machine-learning-model":
			f.Models = append(f.Models, Model{
				Name: c.Name, LocationKind: first("model:location-kind"), PURL: c.PURL,
				Pinned:   first("model:unpinned") != "true",
				Licensed: len(c.Licenses) > 0,
			})
		case strings.HasPrefix(c.BOMRef, "runtime:"):
			rt := Runtime{Name: first("runtime:name"), Version: c.Version, Confidence: first("runtime:confidence")}
			if rt.Name == "" {
				rt.Name = strings.ToLower(c.Name)
			}
			f.Runtimes = append(f.Runtimes, rt)
		case c.Type == "container":
			img := Image{Ref: strings.TrimPrefix(c.BOMRef, "container:")}
			for _, d := range props("image:digest") {
				if d != "unresolved" && d != "" {
					img.Digests = append(img.Digests, d)
				}
			}
			f.Images = append(f.Images, img)
		}
	}
	return f, nil
}

// Organisation is a Hugging Face model's organisation ("Qwen" of
// "Qwen/Qwen2.5-1.5B-Instruct"); "" for other models.
func (m Model) Organisation() string {
	if m.LocationKind != "huggingface" {
		return ""
	}
	org, _, ok := strings.Cut(m.Name, "/")
	if !ok {
		return ""
	}
	return org
}

// Registry is where the model comes from: huggingface.co, the host of an
// OCI registry, or else the location kind (s3, gcs, pvc, path, ...).
func (m Model) Registry() string {
	switch m.LocationKind {
	case "huggingface":
		return "huggingface.co"
	case "oci":
		if host := ociHost(m.PURL); host != "" {
			return host
		}
		host, _, _ := strings.Cut(m.Name, "/")
		return host
	}
	return m.LocationKind
}

// ociHost is the registry host of a pkg:oci purl's repository_url.
func ociHost(purl string) string {
	_, q, ok := strings.Cut(purl, "?")
	if !ok {
		return ""
	}
	vals, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	host, _, _ := strings.Cut(vals.Get("repository_url"), "/")
	return host
}
