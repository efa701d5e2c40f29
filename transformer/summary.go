package transformer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SummaryOf reads the Summary back from BOM bytes that Render produced, so that
// `bomstream history` can describe stored versions without re-rendering them.
// For a BOM rendered by this package, SummaryOf(res.BOM) equals res.Summary.
func SummaryOf(bom []byte) (Summary, error) {
	var doc struct {
		Metadata struct {
			Component struct {
				Properties []struct{ Name, Value string } `json:"properties"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			BOMRef     string                         `json:"bom-ref"`
			Type       string                         `json:"type"`
			Name       string                         `json:"name"`
			Version    string                         `json:"version"`
			Properties []struct{ Name, Value string } `json:"properties"`
		} `json:"components"`
	}
	if err := json.Unmarshal(bom, &doc); err != nil {
		return Summary{}, fmt.Errorf("summary of bom: %w", err)
	}
	var s Summary
	for _, p := range doc.Metadata.Component.Properties {
		if p.Name == propPrefix+"role" {
			s.Roles = append(s.Roles, p.Value)
		}
	}
	for _, c := range doc.Components {
		switch {
		case strings.HasPrefix(c.BOMRef, "runtime:"):
			rt := RuntimeSummary{Name: c.Name, Version: c.Version}
			for _, p := range c.Properties {
				switch p.Name {
				case propPrefix + "runtime:name":
					rt.Name = p.Value
				case propPrefix + "runtime:confidence":
					rt.Confidence = p.Value
				}
			}
			s.Runtimes = append(s.Runtimes, rt)
		case c.Type == "machine-learning-model":
			s.Models = append(s.Models, c.Name)
		}
	}
	return s, nil
}
