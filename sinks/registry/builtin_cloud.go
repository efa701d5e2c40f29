//go:build !nocloudsinks

package registry

import (
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/gcs"
	"github.com/bomstream/bomstream/sinks/oci"
)

// Builtin returns a new registry of the sinks compiled into bomstream: the
// local ones and the cloud ones ("dependencytrack", "gcs", "oci"). Callers
// may add their own types to the returned map.
func Builtin() sinks.Registry {
	r := Local()
	r[dtrack.Type] = dtrack.SinkType
	r[gcs.Type] = gcs.SinkType
	r[oci.Type] = oci.SinkType
	return r
}
