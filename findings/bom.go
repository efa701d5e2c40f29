package findings

import (
	"fmt"
	"net/url"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bomstream/bomstream/schemas"
)

// Facts are what the rules look at in one AI-BOM (schemas.BOMFacts):
// read back from its CycloneDX JSON (ReadFacts, the properties the
// transformer writes, see docs/ARCHITECTURE.md), or given by the
// transformer with the BOM it renders.
type Facts = schemas.BOMFacts

// Model, Runtime and Image are the facts of one component.
type (
	Model   = schemas.ModelFact
	Runtime = schemas.RuntimeFact
	Image   = schemas.ImageFact
)

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
		f.AddComponent(schemas.FactComponent{BOMRef: c.BOMRef, Type: c.Type, Name: c.Name, Version: c.Version, PURL: c.PURL,
			Licensed: len(c.Licenses) > 0,
			Property: func(name string) (vals []string) {
				for _, p := range c.Properties {
					if p.Name == prop+name {
						vals = append(vals, p.Value)
					}
				}
				return vals
			}})
	}
	return f, nil
}

// organisation is a Hugging Face model's organisation ("Qwen" of
// "Qwen/Qwen2.5-1.5B-Instruct"); "" for other models.
func organisation(m Model) string {
	if m.LocationKind != "huggingface" {
		return ""
	}
	org, _, ok := strings.Cut(m.Name, "/")
	if !ok {
		return ""
	}
	return org
}

// registry is where the model comes from: huggingface.co, the host of an
// OCI registry, or else the location kind (s3, gcs, pvc, path, ...).
func registry(m Model) string {
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
