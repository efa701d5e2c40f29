package runner

import (
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/engine"
)

// Config tunes one runner: the consume engine's settings (the durable
// consumer, default "sink-<sink name>"; concurrency; attempt timeout;
// backoff; MaxAttempts, default 0: a transient error is retried until the
// store is back) and the latest-only switch. The zero value is usable.
type Config struct {
	engine.Config `yaml:",inline"`
	// LatestOnly skips superseded versions, for sinks that keep only the
	// latest state of a workload. Unset: the sink type's default.
	LatestOnly *bool `yaml:"latestOnly"`
}

// Validate checks the configuration, naming the field at fault under prefix
// (e.g. "sinks[0].runner").
func (c Config) Validate(prefix string) error { return c.Config.Validate(prefix) }

// durable is the consumer name of sink.
func (c Config) durable(sink string) string {
	if c.Durable != "" {
		return c.Durable
	}
	return schemas.SinkDurable(sink)
}
