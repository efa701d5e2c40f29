package dtrack

import (
	"strings"

	"github.com/bomstream/bomstream/sinks"
)

// LocationType is the Type of the sink's locations (sinks.Location).
const LocationType = "dependency-track"

// Locate implements sinks.Locator: the workload's project, named by the
// templates as Export names it, on the configured API server, when v is
// the workload's current version. A project holds only its last upload,
// so an older version is nowhere; a tombstone neither (it deactivates,
// deletes or keeps the project as it is). The location carries the
// server's base URL, never the API key.
func (s *Sink) Locate(v sinks.Version) []sinks.Location {
	if !v.HasBOM() || !v.Latest {
		return nil
	}
	t, err := s.target(v.Workload)
	if err != nil {
		return nil // Export refuses the workload: nothing is uploaded
	}
	return []sinks.Location{{
		Sink: s.name, Type: LocationType, What: "project",
		Where: "project " + t.name + " version " + t.version + " at " + strings.TrimSuffix(s.cfg.URL, "/"),
	}}
}
