package stream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// DefaultRetryFor bounds how long one call keeps retrying a request that
// failed for a reason a cluster heals by itself (a stream leader election,
// a reconnect): long enough for an election, which takes seconds, and well
// inside DuplicateWindow, so that a retried publish is still recognised by
// its Nats-Msg-Id.
const DefaultRetryFor = 90 * time.Second

// attemptTimeout bounds one request of a retried call.
const attemptTimeout = 5 * time.Second

// ErrPublishDenied is the cause of a publish the server refused by
// permission: the connection's user may not publish on that subject (an
// edge, for instance, publishes only under its own cluster's subjects).
var ErrPublishDenied = errors.New("the server refused the publish: this connection's user may not publish on the subject")

// retryFor is how long a call retries, at most DuplicateWindow minus a
// margin (or MaxAge, the window then being that).
func (c Config) retryFor() time.Duration {
	d := c.RetryFor
	if d == 0 {
		d = DefaultRetryFor
	}
	limit := DuplicateWindow
	if c.MaxAge > 0 && c.MaxAge < limit {
		limit = c.MaxAge
	}
	return min(d, limit*3/4)
}

// retry runs fn until it succeeds, fails for a reason no retry cures, ctx
// ends, or the configured RetryFor passes; each attempt gets at most
// attemptTimeout. repeatable says that running fn twice is harmless (a
// read, a publish with a Nats-Msg-Id, a conditional write): only then is
// a timeout retried, since the first attempt may have been stored. What
// proves a request never reached a stream (no responders, a closed or
// reconnecting connection) is retried either way. subject, when not empty,
// is checked against the permission violations the server reported, and
// such a publish fails at once with ErrPublishDenied. Every call fails at
// once with ErrCredentialsRefused once the client has given up because
// the server refuses its credentials (an expired or revoked user).
func (b *Bus) retry(ctx context.Context, subject string, repeatable bool, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(b.cfg.retryFor())
	pause := 50 * time.Millisecond
	for n := 1; ; n++ {
		if subject != "" && b.denied.check(subject) {
			return fmt.Errorf("%s: %w", subject, ErrPublishDenied)
		}
		if err := b.credentialsRefused(); err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		if subject != "" && b.denied.check(subject) || b.credentialsRefused() != nil {
			continue // said at the top of the loop
		}
		if ctx.Err() != nil || !transient(err, repeatable) || time.Now().After(deadline) {
			return err
		}
		if subject != "" && errors.Is(err, nats.ErrNoResponders) {
			if name, serr := streamOf(subject); serr == nil && b.streamGone(ctx, name) {
				return fmt.Errorf("%s: %w", subject, err)
			}
		}
		b.log.Debug("retrying a request the cluster may heal", zap.Int("attempt", n), zap.Error(err))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(rand.N(pause) + pause/2):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// Retry runs fn, one JetStream request or a few, under the bus's bounded
// retry (see retry) for the callers outside this package that hold a
// stream or consumer handle (the consume engine, the findings stage):
// what fails for a reason the cluster heals by itself (a leader election,
// a reconnect) is tried again, each attempt within attemptTimeout, for at
// most Config.RetryFor. repeatable says that running fn twice is
// harmless: a read, an idempotent create or update, a conditional write;
// only then is a timeout retried.
func (b *Bus) Retry(ctx context.Context, repeatable bool, fn func(ctx context.Context) error) error {
	return b.retry(ctx, "", repeatable, fn)
}

// streamGone reports whether the server says stream name does not exist:
// "no responders" then means a deleted stream, which no retry brings back
// (a leader election answers otherwise, or not at all).
func (b *Bus) streamGone(ctx context.Context, name string) bool {
	ictx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	_, err := b.js.Stream(ictx, name)
	return errors.Is(err, jetstream.ErrStreamNotFound)
}

// Transient reports whether err, the answer to a request that is harmless
// twice (a read, a publish with a Nats-Msg-Id, a conditional write), is
// one a cluster heals by itself: what the bus's own retry would try again.
func Transient(err error) bool { return transient(err, true) }

// transient reports whether err is one a cluster heals by itself. A
// timeout counts only for repeatable requests.
func transient(err error, repeatable bool) bool {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting) {
		return true
	}
	if !repeatable {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
		return true
	}
	switch APIErrorCode(err) {
	// no peers for placement (a peer offline), cluster not available,
	// not leader, stream or consumer offline
	case 10005, 10008, 10009, 10118, 10119:
		return true
	}
	return false
}

// APIErrorCode is the JetStream API error code in err's chain, 0 when none:
// from the jetstream package's errors, from the nats package's (a KV watch
// or listing still goes through the older API), or from the text of one
// the client flattened into a string (a failed message deletion).
func APIErrorCode(err error) int {
	var apiErr jetstream.JetStreamError
	if errors.As(err, &apiErr) && apiErr.APIError() != nil {
		return int(apiErr.APIError().ErrorCode)
	}
	var natsErr nats.JetStreamError
	if errors.As(err, &natsErr) && natsErr.APIError() != nil {
		return int(natsErr.APIError().ErrorCode)
	}
	if errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, "err_code="); ok {
			n := 0
			for _, r := range after {
				if r < '0' || r > '9' {
					break
				}
				n = 10*n + int(r-'0')
			}
			return n
		}
	}
	return 0
}

// deniedSubjects remembers the publish permission violations the server
// reported on the connection (they arrive asynchronously, as -ERR).
type deniedSubjects struct {
	mu   sync.Mutex
	subj map[string]struct{}
}

// record is the connection's error handler's part: it keeps the subject
// of a publish permission violation.
func (d *deniedSubjects) record(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	const marker = `Publish to "`
	msg := err.Error()
	_, after, ok := strings.Cut(msg, marker)
	if !ok {
		return
	}
	rest := after
	before0, _, ok0 := strings.Cut(rest, "\"")
	if !ok0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.subj == nil {
		d.subj = make(map[string]struct{})
	}
	d.subj[before0] = struct{}{}
}

// check reports whether a publish on subject was refused.
func (d *deniedSubjects) check(subject string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.subj[subject]
	return ok
}
