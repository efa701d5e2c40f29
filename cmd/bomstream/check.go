package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/check"
)

// checkCmd verifies the store and, with --repair, repairs what can be
// derived again; docs/check.md says what that is.
func checkCmd(e *env) *cobra.Command {
	var (
		c      common
		repair bool
	)
	cmd := &cobra.Command{
		Use:   "check [--repair]",
		Short: "Verify the streams, consumers and sink ledgers; with --repair, rebuild what CHANGES can",
		Example: `  bomstream check
  bomstream check --repair
  bomstream check --nats-url nats://nats:4222`,
		Long: `check reads the store and holds its parts against each other: the sequences
CHANGES and BOMS lost, every handled change's outcome on BOMS, where the
consumers stand, and each sink's ledger. It prints what it found with the
workloads concerned and exits 1 when a problem remains.

With --repair it renders lost BOMs and tombstones again from CHANGES, resets
or re-creates consumers that would skip or repeat messages, then checks
again. What CHANGES itself lost cannot be rebuilt; see docs/check.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.load(cmd, e.getenv, nil)
			if err != nil {
				return err
			}
			cfg.Log.Level = orDefault(cfg.Log.Level, "warn")
			return process(cmd, e, cfg, stages{transformer: true, attach: true}, func(ctx context.Context, p *pipeline) error {
				if repair && p.bus.ViaOwner() {
					return errors.New("check --repair: a bomstream process owns the data directory and repairs what it finds when it starts; restart it, or stop it and repair by hand (check alone works while it runs)")
				}
				return checkStore(ctx, p, cmd.OutOrStdout(), repair)
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().BoolVar(&repair, "repair", false, "repair what can be derived again, then check again")
	return cmd
}

// checker is the store check of the pipeline's configuration.
func (p *pipeline) checker(ctx context.Context) (*check.Checker, error) {
	other, err := p.otherTransformerUpTo(ctx)
	if err != nil {
		return nil, err
	}
	durables := map[string]string{}
	for _, s := range p.cfg.Sinks {
		if s.Runner.Durable != "" {
			durables[s.Name] = s.Runner.Durable
		}
	}
	return check.New(p.bus, check.Config{
		Transformer:        p.svc,
		Ledgers:            ledgers{p.bus},
		TransformerDurable: p.svc.Durable(),
		OtherUpTo:          other,
		SinkDurable: func(sink string) string {
			if d, ok := durables[sink]; ok {
				return d
			}
			return schemas.SinkDurable(sink)
		},
	})
}

// ledgers reads the sinks' ledgers for a check, as the sink runner keeps
// them.
type ledgers struct{ bus *stream.Bus }

func (l ledgers) ReadLedger(ctx context.Context, sink string) ([]check.Applied, []string, error) {
	entries, bad, err := runner.ReadLedger(ctx, l.bus, sink)
	out := make([]check.Applied, len(entries))
	for i, a := range entries {
		out[i] = check.Applied{Cluster: a.Cluster, UID: a.UID, ChangeSeq: a.ChangeSeq, Workload: a.Workload}
	}
	return out, bad, err
}

// checkStore checks, repairs when asked, and fails when problems remain.
func checkStore(ctx context.Context, p *pipeline, out io.Writer, repair bool) error {
	ch, err := p.checker(ctx)
	if err != nil {
		return err
	}
	r, err := ch.Check(ctx, check.Full)
	if err != nil {
		return err
	}
	r.Print(out)
	if repair && r.Repairable() > 0 {
		done, rerr := ch.Repair(ctx, r)
		fmt.Fprintln(out, "\nrepair:")
		for _, d := range done {
			res := fmt.Sprintf("done (%d)", d.Count)
			if d.Err != nil {
				res = "failed: " + d.Err.Error()
			}
			fmt.Fprintf(out, "  %s: %s: %s\n", d.Finding.Area, d.Finding.Fix, res)
		}
		if rerr != nil {
			p.log.Error("repair", zap.Error(rerr))
		}
		if r, err = ch.Check(ctx, check.Full); err != nil {
			return err
		}
		fmt.Fprintln(out, "\nafter the repair:")
		r.Print(out)
	}
	if repair {
		if err := ch.Settle(ctx, r); err != nil {
			return err
		}
	}
	if n := r.Problems(); n > 0 {
		return fmt.Errorf("the store has %d problems", n)
	}
	return nil
}

// checkAtStart checks the embedded store before the stages start: a quick
// look at the states, and a full check only when they show a loss. It
// repairs what can be derived again (lost BOMs, consumers that would skip
// or repeat) and logs the rest. It never stops the start: a store with a
// hole still serves everything it holds. An external server is shared with
// other processes at work: `bomstream check` is for it.
func (p *pipeline) checkAtStart(ctx context.Context) {
	if p.svc == nil || !p.bus.Embedded() {
		return
	}
	log := p.log.Named("check")
	ch, err := p.checker(ctx)
	if err != nil {
		log.Warn("self-check not run", zap.Error(err))
		return
	}
	r, err := ch.Check(ctx, check.Quick)
	if err != nil {
		log.Warn("self-check failed", zap.Error(err))
		return
	}
	logFindings(log, r)
	if r.Repairable() == 0 {
		if r.Problems() == 0 {
			settle(ctx, ch, r, log)
		}
		return
	}
	done, err := ch.Repair(ctx, r)
	for _, d := range done {
		if d.Err == nil {
			log.Info("repaired", zap.String("area", d.Finding.Area), zap.String("repair", d.Finding.Fix), zap.Int("count", d.Count))
		}
	}
	if err != nil {
		log.Error("repair failed", zap.Error(err))
	}
	if r, err = ch.Check(ctx, check.Quick); err != nil {
		log.Warn("self-check after the repair failed", zap.Error(err))
		return
	}
	if n := r.Problems(); n > 0 {
		log.Warn(fmt.Sprintf("the store still has %d problems after the repair; `bomstream check` lists them", n))
		logFindings(log, r)
		return
	}
	settle(ctx, ch, r, log)
	log.Info("store repaired: every derivable outcome and consumer position is back")
}

// settle records that the holes of BOMS hold nothing more to rebuild.
func settle(ctx context.Context, ch *check.Checker, r *check.Report, log *zap.Logger) {
	if err := ch.Settle(ctx, r); err != nil {
		log.Warn("self-check", zap.Error(err))
	}
}

// logFindings logs problems as warnings and notes as information.
func logFindings(log *zap.Logger, r *check.Report) {
	for _, f := range r.Findings {
		fields := []zap.Field{zap.String("area", f.Area)}
		if len(f.Workloads) > 0 {
			fields = append(fields, zap.Int("workloads", len(f.Workloads)), zap.Strings("first", f.Workloads[:min(len(f.Workloads), 5)]))
		}
		if f.Fix != "" {
			fields = append(fields, zap.String("repair", f.Fix))
		}
		if f.Severity == check.Problem {
			log.Warn("self-check: "+f.Text, fields...)
		} else {
			log.Info("self-check: "+f.Text, fields...)
		}
	}
}
