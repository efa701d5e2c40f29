package gcs

import (
	"net/url"
	"strings"

	"github.com/bomstream/bomstream/sinks"
)

// consoleURL is the Cloud console's page of an object: consoleURL +
// bucket + "/" + object.
const consoleURL = "https://console.cloud.google.com/storage/browser/_details/"

// Locate implements sinks.Locator: the version's immutable object (named
// by WorkloadPaths and BOMObject, as Export names it), and latest.cdx.json
// when it is the workload's current version. With Google's endpoint each
// location links to the object's page in the Cloud console; with another
// (an emulator, a private endpoint) there is no link.
func (s *Sink) Locate(v sinks.Version) []sinks.Location {
	if !v.HasBOM() {
		return nil
	}
	p, err := s.WorkloadPaths(v.Workload)
	if err != nil {
		return nil // Export refuses the workload: nothing is written
	}
	locs := []sinks.Location{s.location("object", s.BOMObject(p, v.BomHash))}
	if v.Latest {
		locs = append(locs, s.location("latest object", p.Latest))
	}
	return locs
}

func (s *Sink) location(what, object string) sinks.Location {
	l := sinks.Location{Sink: s.name, Type: Type, What: what, Where: "gs://" + s.bucket + "/" + object}
	if s.console {
		segs := strings.Split(object, "/")
		for i, seg := range segs {
			segs[i] = url.PathEscape(seg)
		}
		l.URL = consoleURL + s.bucket + "/" + strings.Join(segs, "/")
	}
	return l
}
