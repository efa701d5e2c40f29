package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"strings"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/transformer/rerender"
)

// rerenderPass makes a pass with the process's renderer; one that is no
// dry run and goes through stores the fingerprint.
func rerenderPass(ctx context.Context, p *Pipeline, dryRun bool) (rerender.Report, error) {
	opts := rerender.Options{DryRun: dryRun, Fingerprint: fingerprint(p), Durable: p.svc.Durable(), Log: p.log.Named("rerender")}
	rep, err := rerender.Rerender(ctx, p.bus, p.renderer, opts)
	if err != nil || dryRun {
		return rep, err
	}
	return rep, rerender.StoreAfter(ctx, p.bus, opts.Fingerprint, rep.Floor)
}

// otherTransformerUpTo is check.Config.OtherUpTo for this process's
// transformer.
func otherTransformerUpTo(ctx context.Context, p *Pipeline) (uint64, error) {
	if p.renderer == nil {
		return 0, nil
	}
	n, err := rerender.OtherUpTo(ctx, p.bus, fingerprint(p))
	if err != nil {
		return 0, fmt.Errorf("check: %w", err)
	}
	return n, nil
}

// startRerender re-renders the store in the background when it was
// rendered by another transformer (or its fingerprint is missing), and
// closes p.rerendered once done; waitDrained waits for it.
func startRerender(ctx context.Context, p *Pipeline) {
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
		err = rerender.StoreAfter(ctx, p.bus, fingerprint(p), before)
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
		opts := rerender.Options{Fingerprint: fingerprint(p), Durable: p.svc.Durable(), Log: log}
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
func sourceDone(p *Pipeline) {
	if p.sourcePassed != nil {
		p.sourceOnce.Do(func() { close(p.sourcePassed) })
	}
}

// fingerprint is the renderer's, and the build's revision when the binary
// carries one: a build of other code is another transformer.
func fingerprint(p *Pipeline) string {
	fp := p.renderer.Fingerprint()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fp
	}
	var rev strings.Builder
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			rev.WriteString(s.Key + "=" + s.Value + ";")
		}
	}
	if rev.String() == "" {
		return fp
	}
	sum := sha256.Sum256([]byte(fp + "\n" + rev.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}
