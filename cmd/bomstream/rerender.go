package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/transformer/rerender"
)

// rerenderCmd renders the current state of every workload again with this
// build's transformer and its rules, and appends a new change event where
// the BOM's content changes (package transformer/rerender). With an owner
// of the data directory the owner does it, with its transformer.
func rerenderCmd(e *env) *cobra.Command {
	var (
		c      common
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "rerender [--dry-run]",
		Short: "Render every workload's current state again; publish a new BOM version only where the content changes",
		Example: `  bomstream rerender --dry-run
  bomstream rerender
  bomstream rerender --nats-url nats://nats:4222`,
		Long: `rerender renders the last change of every workload with the current
transformer and rules, compares the content with the workload's current BOM
(bomstream's own version in metadata.tools and the serial number are not
content), and appends a copy of the change event where it differs: the
pipeline then makes one new version of each such workload, which the sinks
export once. The process that runs the transformer does this by itself when
it starts with new rules or a new version. --dry-run lists what would change
and publishes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return process(cmd, e, cfg, stages{transformer: true, attach: true}, func(ctx context.Context, p *pipeline) error {
				var rep rerender.Report
				var err error
				if p.bus.ViaOwner() {
					rep, err = rerenderThroughOwner(ctx, p, dryRun)
				} else {
					rep, err = p.rerender(ctx, dryRun)
				}
				printRerender(out, rep, dryRun)
				if err == nil && !dryRun && p.bus.Embedded() && !p.bus.ViaOwner() && len(rep.Changes) > 0 {
					fmt.Fprintln(out, "rerender: no process runs the transformer on this store; the next run renders the new events")
				}
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the workloads whose BOM would change and publish nothing")
	return cmd
}

// printRerender prints a line per workload that changes, then a summary.
func printRerender(out io.Writer, rep rerender.Report, dryRun bool) {
	verb := "new version"
	if dryRun {
		verb = "would change"
	}
	for _, c := range rep.Changes {
		fmt.Fprintf(out, "%s\t%s\t%s\n", c.Workload, verb, c.What)
	}
	fmt.Fprintf(out, "rerender: %d workloads, %d changed, %d unchanged, %d not rendered yet, %d failed%s\n",
		rep.Workloads, len(rep.Changes), rep.Workloads-len(rep.Changes)-rep.Pending-rep.Failed, rep.Pending, rep.Failed, map[bool]string{true: " (dry run: nothing published)"}[dryRun])
}

// rerenderRequest asks the data directory's owner for a pass.
type rerenderRequest struct {
	DryRun bool `json:"dryRun,omitempty"`
}

func rerenderThroughOwner(ctx context.Context, p *pipeline, dryRun bool) (rerender.Report, error) {
	body, _ := json.Marshal(rerenderRequest{DryRun: dryRun})
	var rep rerender.Report
	raw, err := p.bus.Control().Call(ctx, "rerender", body, func([]byte) {})
	if err != nil {
		return rep, fmt.Errorf("rerender through the process that owns the data directory: %w", err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, fmt.Errorf("rerender: %w", err)
	}
	return rep, nil
}

func (p *pipeline) controlRerender(ctx context.Context, body []byte, _ func([]byte)) ([]byte, error) {
	var req rerenderRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("rerender request: %w", err)
	}
	if p.svc == nil {
		return nil, fmt.Errorf("the process that owns the data directory runs no transformer")
	}
	p.log.Info("rerender requested", zap.Bool("dryRun", req.DryRun))
	rep, err := p.rerender(ctx, req.DryRun)
	if err != nil {
		return nil, err
	}
	return json.Marshal(rep)
}

// rerender makes a pass with the process's renderer; one that is no dry
// run and goes through stores the fingerprint.
func (p *pipeline) rerender(ctx context.Context, dryRun bool) (rerender.Report, error) {
	opts := rerender.Options{DryRun: dryRun, Fingerprint: p.fingerprint(), Durable: p.svc.Durable(), Log: p.log.Named("rerender")}
	rep, err := rerender.Rerender(ctx, p.bus, p.renderer, opts)
	if err != nil || dryRun {
		return rep, err
	}
	return rep, rerender.StoreAfter(ctx, p.bus, opts.Fingerprint, rep.Floor)
}

// otherTransformerUpTo is check.Config.OtherUpTo for this process's
// transformer.
func (p *pipeline) otherTransformerUpTo(ctx context.Context) (uint64, error) {
	if p.renderer == nil {
		return 0, nil
	}
	n, err := rerender.OtherUpTo(ctx, p.bus, p.fingerprint())
	if err != nil {
		return 0, fmt.Errorf("check: %w", err)
	}
	return n, nil
}

// startRerender re-renders the store in the background when it was
// rendered by another transformer (or its fingerprint is missing), and
// closes p.rerendered once done; waitDrained waits for it.
func (p *pipeline) startRerender(ctx context.Context) {
	if p.rerendered == nil {
		return
	}
	// What the transformer handled before this process's began: the
	// events another transformer may have rendered to nothing.
	before, err := rerender.AckFloor(ctx, p.bus, p.svc.Durable())
	var untouched bool
	if err == nil {
		untouched, err = rerender.Untouched(ctx, p.bus, before)
	}
	if err == nil && untouched {
		// A new store: everything in it is this transformer's to render.
		err = rerender.StoreAfter(ctx, p.bus, p.fingerprint(), before)
	}
	if err != nil || untouched {
		p.rerenderErr = err
		close(p.rerendered)
		return
	}
	go func() {
		defer close(p.rerendered)
		if p.sourcePassed != nil {
			// After the source's first pass: a workload whose inputs
			// changed too gets its new event from the source, which the
			// transformer renders with the new rules, and no copy.
			select {
			case <-p.sourcePassed:
			case <-ctx.Done():
				return
			}
		}
		log := p.log.Named("rerender")
		opts := rerender.Options{Fingerprint: p.fingerprint(), Durable: p.svc.Durable(), Log: log}
		rep, ran, err := rerender.AtStart(ctx, p.bus, p.renderer, opts, before)
		if err != nil {
			p.rerenderErr = fmt.Errorf("re-render at start: %w", err)
			log.Error("re-render at start failed; the next start tries again", zap.Error(err))
			return
		}
		if ran {
			log.Info("store re-rendered with a new transformer", zap.Int("workloads", rep.Workloads), zap.Int("changed", len(rep.Changes)), zap.Int("pending", rep.Pending))
		}
	}()
}

// sourceDone opens the re-render's wait for the source's first pass.
func (p *pipeline) sourceDone() {
	if p.sourcePassed != nil {
		p.sourceOnce.Do(func() { close(p.sourcePassed) })
	}
}

// fingerprint is the renderer's, and the build's revision when the binary
// carries one: a build of other code is another transformer.
func (p *pipeline) fingerprint() string {
	fp := p.renderer.Fingerprint()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fp
	}
	var rev string
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			rev += s.Key + "=" + s.Value + ";"
		}
	}
	if rev == "" {
		return fp
	}
	sum := sha256.Sum256([]byte(fp + "\n" + rev))
	return "sha256:" + hex.EncodeToString(sum[:])
}
