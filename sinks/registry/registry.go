// Package registry builds the table of built-in sink types. It is the one
// place that lists them and imports every sink package, so that package
// sinks itself stays free of them.
//
// The cloud sinks (Dependency-Track, Google Cloud Storage, OCI registries)
// bring gRPC, OpenTelemetry and registry clients with them; a build with
// -tags nocloudsinks leaves them out (builtin_local.go), for the collector,
// which runs no sink.
package registry

import (
	"slices"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/stdout"
)

// Local returns a new registry of the sinks every build has: "file" and
// "stdout".
func Local() sinks.Registry {
	return sinks.Registry{file.Type: file.SinkType, stdout.Type: stdout.SinkType}
}

// CloudTypes are the types of the cloud sinks, which a build with -tags
// nocloudsinks leaves out. They are spelled here rather than read from the
// sink packages, so that naming them links none of those packages.
func CloudTypes() []string { return []string{"dependencytrack", "gcs", "oci"} }

// OmittedHint tells a configuration that names a sink type this build left
// out why there is none, and where to find it; "" for any other type.
func OmittedHint(reg sinks.Registry, typ string) string {
	if _, ok := reg[typ]; ok || !slices.Contains(CloudTypes(), typ) {
		return ""
	}
	return "; this build of bomstream leaves it out (-tags nocloudsinks, the bomstream-collector image): run the bomstream image or binary for this sink"
}
