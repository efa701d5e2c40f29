package rerender

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bomlog"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/transformer/service"
)

// Options tune a pass.
type Options struct {
	// DryRun publishes nothing: the report lists what would change.
	DryRun bool
	// Fingerprint is the renderer's (transformer.Renderer.Fingerprint): the
	// value of the Bomstream-Rerender header of the events appended.
	Fingerprint string
	// Durable is the transformer's consumer on CHANGES; default
	// service.DefaultDurable.
	Durable string
	// Log gets a line per workload that changes; nil logs nothing.
	Log *zap.Logger
	// now is the time of the events appended; time.Now when nil (tests).
	now func() time.Time
}

// Change is one workload whose BOM changes.
type Change struct {
	Workload schemas.Workload `json:"workload"`
	// What changes: "newly serving", "no longer serving", the components
	// that come and go ("+runtime vllm 0.6.3, -model x"), or "content".
	What string `json:"what"`
	// Seq is the CHANGES sequence of the event appended (0 in a dry run).
	Seq uint64 `json:"seq,omitempty"`
}

// Report is what a pass did.
type Report struct {
	Workloads int      `json:"workloads"` // current states read (deletions included)
	Pending   int      `json:"pending"`   // not handled by the transformer yet: rendered with the new rules anyway
	Changes   []Change `json:"changes"`   // published, or that would be in a dry run
	Failed    int      `json:"failed"`    // could not be rendered or compared (see the error)
	// Floor is the transformer's ack floor on CHANGES when the pass began:
	// the events up to it were handled by the transformer before.
	Floor uint64 `json:"floor"`
}

// maxAttempts bounds how often one workload is decided again after losing
// a race to another writer.
const maxAttempts = 10

// Rerender renders the last event of every workload on CHANGES with r and
// appends a copy of it where the content of its BOM changes; see the
// package comment. Errors of single workloads are joined and returned after
// the pass, which goes on.
func Rerender(ctx context.Context, bus *stream.Bus, r service.Renderer, opts Options) (Report, error) {
	if opts.Durable == "" {
		opts.Durable = service.DefaultDurable
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	var rep Report
	floor, err := AckFloor(ctx, bus, opts.Durable)
	if err != nil {
		return rep, err
	}
	rep.Floor = floor
	changes := changelog.New(bus)
	var errs []error
	err = bus.Reader().LastPerSubject(ctx, schemas.StreamChanges, schemas.SubjectChangesPrefix+">", false, func(m *jetstream.RawStreamMsg) error {
		rep.Workloads++
		ev, err := changelog.Decode(m.Data)
		if err != nil {
			rep.Failed++
			errs = append(errs, fmt.Errorf("CHANGES seq %d: %w", m.Sequence, err))
			return nil
		}
		c, pending, err := decide(ctx, bus, changes, r, opts, floor, ev, m.Sequence)
		switch {
		case err != nil:
			rep.Failed++
			errs = append(errs, err)
		case pending:
			rep.Pending++
		case c != nil:
			rep.Changes = append(rep.Changes, *c)
			opts.Log.Info("re-rendered", zap.Stringer("workload", c.Workload), zap.String("what", c.What), zap.Bool("dryRun", opts.DryRun))
		}
		return ctx.Err()
	})
	if err != nil {
		return rep, fmt.Errorf("rerender: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("rerender: %w", err)
	}
	return rep, nil
}

// decide renders ev, the last event of its workload at seq, compares it with
// the workload's BOM and appends its copy when it changes. pending: the
// transformer has not handled the workload's last event yet.
func decide(ctx context.Context, bus *stream.Bus, changes *changelog.Log, r service.Renderer, opts Options, floor uint64, ev schemas.WorkloadChange, seq uint64) (c *Change, pending bool, err error) {
	w := ev.Data.Workload
	for range maxAttempts {
		if seq > floor {
			return nil, true, nil
		}
		if ev.IsTombstone() {
			return nil, false, nil
		}
		what, err := compare(ctx, bus, r, ev)
		if err != nil || what == "" {
			return nil, false, err
		}
		c := &Change{Workload: w, What: what}
		if opts.DryRun {
			return c, false, nil
		}
		cp := ev
		cp.Time = opts.now().UTC()
		h := nats.Header{}
		h.Set(schemas.HeaderRerender, opts.Fingerprint)
		ack, err := changes.AppendChangeAfter(ctx, cp, seq, h)
		if err == nil && !ack.Duplicate {
			c.Seq = ack.Seq
			return c, false, nil
		}
		if err != nil && !errors.Is(err, stream.ErrWrongLastSeq) {
			return nil, false, fmt.Errorf("rerender %s: %w", w, err)
		}
		// Another writer appended first: read the workload again.
		var ok bool
		ev, seq, ok, err = changes.LastChange(ctx, w)
		if err != nil {
			return nil, false, fmt.Errorf("rerender %s: %w", w, err)
		}
		if !ok {
			return nil, false, nil
		}
	}
	return nil, false, fmt.Errorf("rerender %s: %w", w, changelog.ErrConflict)
}

// compare renders ev and says how its BOM differs from the workload's
// current one on BOMS ("" when it does not). A tombstone there, or no
// message, is no BOM.
func compare(ctx context.Context, bus *stream.Bus, r service.Renderer, ev schemas.WorkloadChange) (string, error) {
	w := ev.Data.Workload
	res, err := r.Render(ev)
	if err != nil {
		return "", fmt.Errorf("rerender %s: render: %w", w, err)
	}
	last, ok, err := bomlog.New(bus).Last(ctx, schemas.BOMsSubject(w))
	if err != nil {
		return "", fmt.Errorf("rerender %s: %w", w, err)
	}
	var old []byte
	if ok {
		if last.Err != nil {
			return "", fmt.Errorf("rerender %s: BOMS seq %d: %w", w, last.Seq, last.Err)
		}
		if !last.IsTombstone() {
			old = last.BOM
		}
	}
	what, err := difference(old, res.BOM)
	if err != nil {
		return "", fmt.Errorf("rerender %s: %w", w, err)
	}
	return what, nil
}

// AckFloor is the CHANGES sequence up to which the transformer's consumer
// durable settled every event; 0 when it has none yet.
func AckFloor(ctx context.Context, bus *stream.Bus, durable string) (uint64, error) {
	cs, err := bus.Durables().List(ctx, schemas.StreamChanges)
	if err != nil {
		return 0, fmt.Errorf("rerender: the transformer's consumer: %w", err)
	}
	for _, c := range cs {
		if c.Name == durable {
			return c.AckFloor, nil
		}
	}
	return 0, nil
}
