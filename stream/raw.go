package stream

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Raw returns the bus's connection and JetStream context, for tests and
// diagnostics that must write what no stage would (a malformed message, a
// deleted consumer). bomstream's own stages never call it: everything they
// need is a Bus method.
func (b *Bus) Raw() (*nats.Conn, jetstream.JetStream) { return b.nc, b.js }
