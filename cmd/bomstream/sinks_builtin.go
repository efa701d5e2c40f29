//go:build !nocloudsinks

package main

import (
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/registry"
)

// builtinSinks are the sink types of this build: all of them. Built with
// -tags nocloudsinks, only the file and stdout sinks (sinks_local.go).
func builtinSinks() sinks.Registry { return registry.Builtin() }

// omittedSinkHint is empty: this build leaves no sink type out.
func omittedSinkHint(string) string { return "" }
