// Package registry builds the table of built-in sink types. It is the one
// place that imports every sink package, so that package sinks itself stays
// free of them.
package registry

import (
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/gcs"
	"github.com/bomstream/bomstream/sinks/oci"
	"github.com/bomstream/bomstream/sinks/stdout"
)

// Builtin returns a new registry of the sinks compiled into bomstream:
// "file", "stdout", "dependencytrack", "gcs" and "oci". Callers may add their own types to the returned map.
func Builtin() sinks.Registry {
	return sinks.Registry{
		file.Type:   file.SinkType,
		stdout.Type: stdout.SinkType,
		dtrack.Type: dtrack.SinkType,
		gcs.Type:    gcs.SinkType,
		oci.Type:    oci.SinkType,
	}
}
