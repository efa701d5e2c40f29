package stream

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
)

// Control requests let a command ask the process that owns an embedded
// store (see Attach) to do work that must not happen in a second process
// (a replay into a sink, a dead-letter retry): the owner's sinks keep state
// in memory. They travel on core NATS subjects "bomstream.control.<name>",
// never stored. A request gets any number of progress messages and then one
// result or one error.
const controlPrefix = "bomstream.control."

const headerControl = "Bomstream-Control"

// ControlHandler does the work of one control request: req is the
// request's body; progress sends a progress message to the caller. Its result
// (or error text) is the final answer.
type ControlHandler func(ctx context.Context, req []byte, progress func([]byte)) ([]byte, error)

// Serve answers the control requests called name with h until ctx is done.
// Requests are handled one at a time, each in its own goroutine.
func (b *Bus) Serve(ctx context.Context, name string, h ControlHandler) error {
	sub, err := b.nc.Subscribe(controlPrefix+name, func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		go func() {
			send := func(kind string, data []byte) {
				out := nats.NewMsg(m.Reply)
				out.Header.Set(headerControl, kind)
				out.Data = data
				if err := b.nc.PublishMsg(out); err != nil {
					b.log.Debug("control reply", zap.String("request", name), zap.Error(err))
				}
			}
			send("progress", nil) // the owner is there and has started
			res, err := b.serveOne(ctx, name, h, m.Data, func(p []byte) { send("progress", p) })
			if err != nil {
				send("error", []byte(schemas.RedactText(err.Error())))
				return
			}
			send("result", res)
		}()
	})
	if err != nil {
		return fmt.Errorf("serve control %s: %w", name, err)
	}
	<-ctx.Done()
	return sub.Unsubscribe()
}

// serveOne runs h on one request; a panic in h is its error, not the end
// of the process that owns the store.
func (b *Bus) serveOne(ctx context.Context, name string, h ControlHandler, req []byte, progress func([]byte)) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("control handler panicked", zap.String("request", name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			res, err = nil, fmt.Errorf("control %s: the handler panicked: %v", name, r)
		}
	}()
	return h(ctx, req, progress)
}

// ErrNoOwner is returned by Call when no process answers the request.
var ErrNoOwner = errors.New("no process answers")

// Call sends the control request name with body req to the owner and
// waits for its answer, passing progress messages to progress (may be nil).
func (b *Bus) Call(ctx context.Context, name string, req []byte, progress func([]byte)) ([]byte, error) {
	inbox := b.nc.NewRespInbox()
	ch := make(chan *nats.Msg, 64)
	sub, err := b.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", name, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(controlPrefix + name)
	m.Reply, m.Data = inbox, req
	if err := b.nc.PublishMsg(m); err != nil {
		return nil, fmt.Errorf("control %s: %w", name, err)
	}
	// The owner answers at once that it started; silence means nobody serves name.
	noAnswer := time.NewTimer(10 * time.Second)
	defer noAnswer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("control %s: %w", name, ctx.Err())
		case <-noAnswer.C:
			return nil, fmt.Errorf("control %s: %w", name, ErrNoOwner)
		case r := <-ch:
			switch r.Header.Get(headerControl) {
			case "progress":
				noAnswer.Stop()
				if progress != nil && len(r.Data) > 0 {
					progress(r.Data)
				}
			case "result":
				return r.Data, nil
			case "error":
				return nil, errors.New(string(r.Data))
			}
		}
	}
}
