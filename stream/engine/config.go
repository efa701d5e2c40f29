package engine

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/bomstream/bomstream/stream/deadletter"
)

// Config is what a stage tells the consume engine. Only Stage, Stream
// and Durable are required; every other field has a default.
type Config struct {
	// Stage names the stage in logs and metrics, and its dead letters go to
	// bomstream.dlq.<Stage> ("transformer", "sink.file").
	Stage string `yaml:"-"`
	// Stream and Durable name the durable pull consumer the engine creates,
	// or joins (its start position then stays as it is).
	Stream  string `yaml:"-"`
	Durable string `yaml:"durable"`
	// Filter is the consumer's subject filter; default every subject.
	Filter      string `yaml:"-"`
	Description string `yaml:"-"`
	// StartSeq or StartTime choose where a new consumer starts; zero means
	// the first message. They never move an existing consumer.
	StartSeq  uint64    `yaml:"startSeq"`
	StartTime time.Time `yaml:"startTime"`

	// MaxInFlight bounds the messages one engine holds at once: fetched,
	// waiting behind an earlier message of their workload, or being handled.
	// Default 1024.
	MaxInFlight int `yaml:"maxInFlight"`
	// Concurrency bounds the handler calls running at once. Default 64.
	Concurrency int `yaml:"concurrency"`
	// AttemptTimeout bounds one handler call. A call that has not returned
	// AttemptTimeout plus a short grace later is abandoned and counts as a
	// failed attempt, so a hung store never pins a workload. Default 30s.
	AttemptTimeout time.Duration `yaml:"attemptTimeout"`
	// MaxAttempts is how many handler calls a transient error gets within
	// one delivery before the message is dead-lettered; 0 (the default)
	// retries until it works, the stage reporting itself degraded meanwhile.
	MaxAttempts int `yaml:"maxAttempts"`
	// MaxDeliver is the poison limit: a message the server has delivered
	// this many times without it being settled (the process crashed, hung
	// or lost its connection while holding it) is dead-lettered before it is
	// worked on again. Default 10.
	MaxDeliver int `yaml:"maxDeliver"`
	// BaseBackoff and MaxBackoff bound the exponential backoff (full
	// jitter) between attempts. Defaults 200ms and 30s.
	BaseBackoff time.Duration `yaml:"baseBackoff"`
	MaxBackoff  time.Duration `yaml:"maxBackoff"`
	// AckWait is the server's redelivery deadline; the engine keeps it
	// alive for every message it holds, so it bounds how long the messages
	// of a process that died wait before they are delivered again. Default 5s.
	AckWait time.Duration `yaml:"ackWait"`
	// DrainTimeout bounds how long handler calls in progress may run after
	// the engine is stopped. Default 10s.
	DrainTimeout time.Duration `yaml:"drainTimeout"`

	// Claim is for a process that owns the server (the embedded default),
	// where any earlier holder of the consumer is a dead predecessor. At
	// start the engine takes the consumer over at once (no waiting for the
	// pin to expire) and rewinds it to its ack floor, so that what the dead
	// process held is delivered again now and before anything newer: one
	// workload's messages keep their order across a crash. The poison limit
	// then counts the crashes while a message was in hand, in a journal.
	Claim bool `yaml:"-"`
}

var (
	tokenPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	durablePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

// Validate names the field of every problem; prefix is the path of the
// configuration block (e.g. "sinks[0].runner").
func (c Config) Validate(prefix string) error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", prefix, field, fmt.Sprintf(format, a...)))
	}
	if c.Durable != "" && !durablePattern.MatchString(c.Durable) {
		bad("durable", "%q is not 1-128 characters of [A-Za-z0-9_-]", c.Durable)
	}
	if c.StartSeq != 0 && !c.StartTime.IsZero() {
		bad("startSeq", "set at most one of startSeq and startTime")
	}
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"maxInFlight", c.MaxInFlight, 16384}, {"concurrency", c.Concurrency, 4096}, {"maxAttempts", c.MaxAttempts, 1 << 20}, {"maxDeliver", c.MaxDeliver, 1 << 20}} {
		if f.v < 0 || f.v > f.max {
			bad(f.name, "%d is outside 0..%d", f.v, f.max)
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"attemptTimeout", c.AttemptTimeout}, {"baseBackoff", c.BaseBackoff}, {"maxBackoff", c.MaxBackoff}, {"ackWait", c.AckWait}, {"drainTimeout", c.DrainTimeout}} {
		if f.d < 0 {
			bad(f.name, "%s is negative", f.d)
		}
	}
	if c.AckWait > 0 && c.AckWait < time.Second {
		bad("ackWait", "%s is under 1s", c.AckWait)
	}
	if c.BaseBackoff > 0 && c.MaxBackoff > 0 && c.BaseBackoff > c.MaxBackoff {
		bad("baseBackoff", "%s exceeds maxBackoff %s", c.BaseBackoff, c.MaxBackoff)
	}
	return errors.Join(errs...)
}

// Engine defaults.
const (
	DefaultMaxInFlight    = 1024
	DefaultConcurrency    = 64
	DefaultAttemptTimeout = 30 * time.Second
	DefaultMaxDeliver     = 10
	DefaultBaseBackoff    = 200 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultAckWait        = 5 * time.Second
	DefaultDrainTimeout   = 10 * time.Second
)

func (c Config) withDefaults() Config {
	c.MaxInFlight = cmp.Or(c.MaxInFlight, DefaultMaxInFlight)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, DefaultMaxDeliver)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, DefaultAttemptTimeout)
	c.BaseBackoff = cmp.Or(c.BaseBackoff, DefaultBaseBackoff)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, DefaultMaxBackoff)
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	if c.BaseBackoff > c.MaxBackoff {
		c.BaseBackoff = c.MaxBackoff
	}
	c.Filter = cmp.Or(c.Filter, ">")
	return c
}

// check is Validate plus the fields only code sets.
func (c Config) check() error {
	var errs []error
	if !deadletter.ValidStage(c.Stage) {
		errs = append(errs, fmt.Errorf("engine: stage %q is not a dot-separated subject", c.Stage))
	}
	if c.Stream == "" || c.Durable == "" {
		errs = append(errs, fmt.Errorf("engine %s: stream and durable are required", c.Stage))
	}
	if err := c.Validate("engine " + c.Stage); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
