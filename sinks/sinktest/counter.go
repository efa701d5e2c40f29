package sinktest

import (
	"context"
	"maps"
	"sync"

	"github.com/bomstream/bomstream/sinks"
)

// Counter wraps a sink and counts the calls that reached it. It is safe for
// concurrent use.
type Counter struct {
	sinks.Sink

	mu         sync.Mutex
	exports    map[string]int // successful Export calls by BomHash
	calls      int            // every Export call
	tombstones []sinks.Tombstone
}

// NewCounter wraps s.
func NewCounter(s sinks.Sink) *Counter {
	return &Counter{Sink: s, exports: map[string]int{}}
}

// Export counts the call, and the BomHash when the inner sink succeeds.
func (c *Counter) Export(ctx context.Context, b sinks.BOM) error {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	err := c.Sink.Export(ctx, b)
	if err == nil {
		c.mu.Lock()
		c.exports[b.BomHash]++
		c.mu.Unlock()
	}
	return err
}

// Tombstone records successful tombstones.
func (c *Counter) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	err := c.Sink.Tombstone(ctx, t)
	if err == nil {
		c.mu.Lock()
		c.tombstones = append(c.tombstones, t)
		c.mu.Unlock()
	}
	return err
}

// Exports returns a copy of the successful export count per BomHash.
func (c *Counter) Exports() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.exports))
	maps.Copy(out, c.exports)
	return out
}

// Calls is the number of Export calls, failed ones included.
func (c *Counter) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Tombstones returns the successful tombstones in call order.
func (c *Counter) Tombstones() []sinks.Tombstone {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sinks.Tombstone(nil), c.tombstones...)
}
