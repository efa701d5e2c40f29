package stream

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/stream/owner"
)

// Raw returns the bus's connection and JetStream context, for tests and
// diagnostics that must write what no stage would (a malformed message, a
// deleted consumer). bomstream's own stages never call it: everything they
// need is a Bus method.
func (b *Bus) Raw() (*nats.Conn, jetstream.JetStream) { return b.nc, b.js }

// Control sends and answers control requests (see package owner) over the
// bus's connection: the owner of an embedded store serves them, and other
// commands on the same data directory call them.
func (b *Bus) Control() *owner.Control { return owner.NewControl(b.nc, b.log) }
