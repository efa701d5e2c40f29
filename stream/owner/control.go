package owner

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

const (
	controlPrefix = "bomstream.control."
	headerControl = "Bomstream-Control"
)

// ErrNoOwner is returned by Call when no process answers the request.
var ErrNoOwner = errors.New("no process answers")

// Handler does the work of one control request: req is the request's body;
// progress sends a progress message to the caller. Its result (or error
// text) is the final answer.
type Handler func(ctx context.Context, req []byte, progress func([]byte)) ([]byte, error)

// Control sends and answers control requests over one NATS connection.
type Control struct {
	nc  *nats.Conn
	log *zap.Logger
}

// NewControl carries control requests over nc; log may be nil.
func NewControl(nc *nats.Conn, log *zap.Logger) *Control {
	if log == nil {
		log = zap.NewNop()
	}
	return &Control{nc: nc, log: log}
}

// Serve answers the control requests called name with h until ctx is done,
// each request in its own goroutine.
func (c *Control) Serve(ctx context.Context, name string, h Handler) error {
	sub, err := c.nc.Subscribe(controlPrefix+name, func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		go c.answer(ctx, name, h, m)
	})
	if err != nil {
		return fmt.Errorf("serve control %s: %w", name, err)
	}
	<-ctx.Done()
	return sub.Unsubscribe()
}

// answer runs h on one request and sends the caller its progress and answer.
func (c *Control) answer(ctx context.Context, name string, h Handler, m *nats.Msg) {
	send := func(kind string, data []byte) {
		out := nats.NewMsg(m.Reply)
		out.Header.Set(headerControl, kind)
		out.Data = data
		if err := c.nc.PublishMsg(out); err != nil {
			c.log.Debug("control reply", zap.String("request", name), zap.Error(err))
		}
	}
	send("progress", nil) // the owner is there and has started
	res, err := c.run(ctx, name, h, m.Data, func(p []byte) { send("progress", p) })
	if err != nil {
		send("error", []byte(schemas.RedactText(err.Error())))
		return
	}
	send("result", res)
}

// run runs h on one request; a panic in h is its error, not the end of the
// process that owns the store.
func (c *Control) run(ctx context.Context, name string, h Handler, req []byte, progress func([]byte)) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("control handler panicked", zap.String("request", name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			res, err = nil, fmt.Errorf("control %s: the handler panicked: %v", name, r)
		}
	}()
	return h(ctx, req, progress)
}

// Call sends the control request name with body req to the owner and
// waits for its answer, passing progress messages to progress (may be nil).
func (c *Control) Call(ctx context.Context, name string, req []byte, progress func([]byte)) ([]byte, error) {
	inbox := c.nc.NewRespInbox()
	ch := make(chan *nats.Msg, 64)
	sub, err := c.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", name, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(controlPrefix + name)
	m.Reply, m.Data = inbox, req
	if err := c.nc.PublishMsg(m); err != nil {
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
