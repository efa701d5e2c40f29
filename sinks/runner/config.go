package runner

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Config tunes one runner. The zero value is usable: every field has a default.
type Config struct {
	// Durable is the consumer name on BOMS; default "sink-<sink name>".
	Durable string `json:"durable" yaml:"durable"`
	// LatestOnly skips superseded versions, for sinks that keep only the
	// latest state of a workload.
	LatestOnly bool `json:"latestOnly" yaml:"latestOnly"`
	// Concurrency is the number of workers; default 4.
	Concurrency int `json:"concurrency" yaml:"concurrency"`
	// MaxAttempts is how many times a transient error is tried before the
	// message goes to the DLQ; default 8.
	MaxAttempts int `json:"maxAttempts" yaml:"maxAttempts"`
	// BaseBackoff and MaxBackoff bound the exponential backoff between
	// attempts (full jitter); defaults 500ms and 30s.
	BaseBackoff time.Duration `json:"baseBackoff" yaml:"baseBackoff"`
	MaxBackoff  time.Duration `json:"maxBackoff" yaml:"maxBackoff"`
	// AckWait is the consumer's ack deadline, kept alive while a message is
	// worked on; default 30s.
	AckWait time.Duration `json:"ackWait" yaml:"ackWait"`
	// DrainTimeout bounds how long in-flight sink calls may run after Run's
	// context is done; default 30s.
	DrainTimeout time.Duration `json:"drainTimeout" yaml:"drainTimeout"`
	// StartSeq or StartTime choose where a new durable consumer (or a
	// Replay) starts; zero means the first message. They do not move an
	// existing consumer: use Replay for that.
	StartSeq  uint64    `json:"startSeq" yaml:"startSeq"`
	StartTime time.Time `json:"startTime" yaml:"startTime"`
}

var durablePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// Validate checks the configuration, naming the field at fault.
func (c Config) Validate() error {
	var errs []error
	if c.Durable != "" && !durablePattern.MatchString(c.Durable) {
		errs = append(errs, fmt.Errorf("runner.durable: %q is not 1-128 characters of [a-zA-Z0-9_-]", c.Durable))
	}
	if c.Concurrency < 0 || c.Concurrency > 1024 {
		errs = append(errs, fmt.Errorf("runner.concurrency: %d is outside 0..1024", c.Concurrency))
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("runner.maxAttempts: negative"))
	}
	for name, d := range map[string]time.Duration{
		"runner.baseBackoff": c.BaseBackoff, "runner.maxBackoff": c.MaxBackoff,
		"runner.ackWait": c.AckWait, "runner.drainTimeout": c.DrainTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: negative", name))
		}
	}
	if c.BaseBackoff > 0 && c.MaxBackoff > 0 && c.BaseBackoff > c.MaxBackoff {
		errs = append(errs, fmt.Errorf("runner.baseBackoff: %s exceeds runner.maxBackoff %s", c.BaseBackoff, c.MaxBackoff))
	}
	if c.AckWait > 0 && c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("runner.ackWait: %s is under 1s", c.AckWait))
	}
	if c.StartSeq != 0 && !c.StartTime.IsZero() {
		errs = append(errs, fmt.Errorf("runner.startSeq and runner.startTime: set at most one"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults(sink string) Config {
	if c.Durable == "" {
		c.Durable = "sink-" + sink
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 8
	}
	if c.BaseBackoff == 0 {
		c.BaseBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.BaseBackoff > c.MaxBackoff {
		c.BaseBackoff = c.MaxBackoff
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	return c
}
