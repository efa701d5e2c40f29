// Package bomlog is the BOM log: the BOMS stream, where the transformer
// appends each workload's BOMs and tombstones, and the sinks and the
// stages read them back.
//
// A [Log] is built over a [stream.Bus] with [New]. [Log.Append] stores a
// message that [schemas.BOMMessage.Encode] made, under the message id its
// codec set, so that a retried append is stored once. [Log.Last] reads a
// workload's last message, its BOM or tombstone now, decoded: the
// transformer compares a new outcome with it, a latest-only sink skips
// what it supersedes, and a re-render compares a new BOM with it.
//
// The read side walks BOMS through [stream.Reader], into its index.
package bomlog
