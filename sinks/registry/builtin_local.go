//go:build nocloudsinks

package registry

import "github.com/bomstream/bomstream/sinks"

// Builtin, built with -tags nocloudsinks, returns the local sinks only
// (see Local).
func Builtin() sinks.Registry { return Local() }
