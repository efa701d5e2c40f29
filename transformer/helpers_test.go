package transformer

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
)

var eventTime = time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)

func wl(kind, name string) schemas.Workload {
	return schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "apps/v1", Kind: kind, Name: name, UID: "uid-" + name}
}

func event(t testing.TB, in *schemas.Inputs) schemas.WorkloadChange {
	t.Helper()
	ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func newRenderer(t testing.TB) *Renderer {
	t.Helper()
	r, err := NewRenderer(Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func bomValidator(t testing.TB) *validate.Validator {
	t.Helper()
	v, err := validate.CycloneDX()
	if err != nil {
		t.Fatalf("cyclonedx validator: %v", err)
	}
	return v
}

// render renders in, validates the BOM against CycloneDX 1.6 and decodes it.
func render(t testing.TB, in *schemas.Inputs) (Result, *bomDoc) {
	t.Helper()
	res, err := newRenderer(t).Render(event(t, in))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if res.BOM == nil {
		return res, nil
	}
	if err := bomValidator(t).ValidateBOM(res.BOM); err != nil {
		t.Fatalf("bom does not validate: %v\n%s", err, res.BOM)
	}
	var doc bomDoc
	if err := json.Unmarshal(res.BOM, &doc); err != nil {
		t.Fatal(err)
	}
	return res, &doc
}

// bomDoc is the part of a CycloneDX document the tests read.
type bomDoc struct {
	SpecVersion  string `json:"specVersion"`
	SerialNumber string `json:"serialNumber"`
	Metadata     struct {
		Timestamp string  `json:"timestamp"`
		Component docComp `json:"component"`
		Tools     struct {
			Components []docComp `json:"components"`
		} `json:"tools"`
	} `json:"metadata"`
	Components   []docComp `json:"components"`
	Dependencies []struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	} `json:"dependencies"`
}

type docComp struct {
	BOMRef     string `json:"bom-ref"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	Version    string `json:"version"`
	PURL       string `json:"purl"`
	Properties []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"properties"`
	Hashes []struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	} `json:"hashes"`
	Evidence struct {
		Identity []struct {
			Field      string  `json:"field"`
			Confidence float64 `json:"confidence"`
			Methods    []struct {
				Technique  string  `json:"technique"`
				Confidence float64 `json:"confidence"`
				Value      string  `json:"value"`
			} `json:"methods"`
		} `json:"identity"`
		Occurrences []struct {
			Location string `json:"location"`
		} `json:"occurrences"`
	} `json:"evidence"`
}

func (c docComp) props(name string) []string {
	var out []string
	for _, p := range c.Properties {
		if p.Name == "bomstream:"+name {
			out = append(out, p.Value)
		}
	}
	return out
}

func (c docComp) prop(name string) string {
	if v := c.props(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (d *bomDoc) byType(typ string) []docComp {
	var out []docComp
	for _, c := range d.Components {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}

func (d *bomDoc) runtime(name string) (docComp, bool) {
	for _, c := range d.byType("application") {
		if c.prop("runtime:name") == name {
			return c, true
		}
	}
	return docComp{}, false
}

func (d *bomDoc) model(name string) (docComp, bool) {
	for _, c := range d.byType("machine-learning-model") {
		if c.Name == name {
			return c, true
		}
	}
	return docComp{}, false
}

func (d *bomDoc) dependsOn(ref string) []string {
	for _, dep := range d.Dependencies {
		if dep.Ref == ref {
			return dep.DependsOn
		}
	}
	return nil
}
