//go:build nocloudsinks

package main

import (
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/stdout"
)

// builtinSinks, built with -tags nocloudsinks: the file and stdout sinks
// only. The Google Cloud Storage, Dependency-Track and OCI sinks, with
// their gRPC, OpenTelemetry and registry clients, are not linked: a binary
// for the collector, which runs no sink, and whose resident set is then
// about half (`make build` writes it as bin/bomstream-collector;
// BenchmarkCollector measures it with BOMSTREAM_BENCH_TAGS=nocloudsinks).
func builtinSinks() sinks.Registry {
	return sinks.Registry{file.Type: file.SinkType, stdout.Type: stdout.SinkType}
}
