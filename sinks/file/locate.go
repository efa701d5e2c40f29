package file

import (
	"path/filepath"
	"strings"

	"github.com/bomstream/bomstream/sinks"
)

// bomFile names the file of the BOM with the given hash ("sha256:<hex>")
// in its workload directory: <hex>.cdx.json.
func bomFile(bomHash string) string {
	return strings.TrimPrefix(bomHash, "sha256:") + Suffix
}

// Locate implements sinks.Locator: the version's file, and latest.cdx.json
// when it is the workload's current version. A relative Dir is relative to
// the working directory of the process running the sink, which the
// locations' Note says.
func (s *Sink) Locate(v sinks.Version) []sinks.Location {
	if !v.HasBOM() {
		return nil
	}
	dir, err := s.WorkloadDir(v.Workload)
	if err != nil {
		return nil // Export refuses the workload: nothing is written
	}
	locs := []sinks.Location{s.location("file", filepath.Join(dir, bomFile(v.BomHash)))}
	if v.Latest {
		locs = append(locs, s.location("latest file", filepath.Join(dir, LatestFile)))
	}
	return locs
}

func (s *Sink) location(what, path string) sinks.Location {
	l := sinks.Location{Sink: s.name, Type: Type, What: what, Where: path}
	if !filepath.IsAbs(path) {
		l.Note = "relative to the working directory of the process running sink " + s.name
	}
	return l
}
