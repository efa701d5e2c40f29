package stream

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The helpers of this package's tests, for its external tests (package
// stream_test): those write through package changelog, which imports
// this one.
var (
	OpenEmbedded   = openEmbedded
	TestContext    = testContext
	TestWorkload   = testWorkload
	Observed       = observed
	WaitUntil      = waitUntil
	SleepMs        = sleepMs
	AttemptTimeout = attemptTimeout
)

// JS and Conn are a bus's JetStream context and connection.
func JS(b *Bus) jetstream.JetStream { return b.js }
func Conn(b *Bus) *nats.Conn        { return b.nc }
