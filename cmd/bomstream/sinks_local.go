//go:build nocloudsinks

package main

import (
	"slices"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/stdout"
)

// builtinSinks, built with -tags nocloudsinks: the file and stdout sinks
// only. The Google Cloud Storage, Dependency-Track and OCI sinks, with
// their gRPC, OpenTelemetry and registry clients, are not linked: a binary
// for the collector, which runs no sink, and whose resident set is then
// about half. `make build` writes it as bin/bomstream-collector, and the
// bomstream-collector image ships it (docs/image.md).
func builtinSinks() sinks.Registry {
	return sinks.Registry{file.Type: file.SinkType, stdout.Type: stdout.SinkType}
}

// omittedSinkHint tells a configuration that names a sink type of the full
// build why this one has none, and where to find it.
func omittedSinkHint(typ string) string {
	if !slices.Contains(cloudSinkTypes(), typ) {
		return ""
	}
	return "; this build of bomstream leaves it out (-tags nocloudsinks, the bomstream-collector image): run the bomstream image or binary for this sink"
}
