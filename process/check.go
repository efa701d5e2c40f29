package process

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/check"
)

// checker is the store check of the pipeline's configuration.
func checker(ctx context.Context, p *Pipeline) (*check.Checker, error) {
	other, err := otherTransformerUpTo(ctx, p)
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

// Check checks the store (bomstream check), prints what it found to out,
// repairs when asked, and fails when problems remain.
func Check(ctx context.Context, p *Pipeline, out io.Writer, repair bool) error {
	ch, err := checker(ctx, p)
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
func checkAtStart(ctx context.Context, p *Pipeline) {
	if p.svc == nil || !p.bus.Embedded() {
		return
	}
	log := p.log.Named("check")
	ch, err := checker(ctx, p)
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

// CheckSink runs the preflight checks of the configured sink named name
// once (bomstream sink check) and prints them to out: can it reach its
// store, does it hold the permissions it needs. It opens no stream and
// touches no data directory.
func CheckSink(ctx context.Context, env Env, cfg Config, name string, out io.Writer) error {
	cfg = withDefaultSinks(cfg)
	if err := cfg.Validate(env.Sinks); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	sel, err := selectSinks(cfg.Sinks, []string{name})
	if err != nil {
		return err
	}
	sc := sel[0]
	scfg, err := env.Sinks.Decode(sc.Type, sc.Config)
	if err != nil {
		return fmt.Errorf("sinks %s: %w", sc.Name, err)
	}
	log := NewLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(env.Stderr)))
	s, err := env.Sinks.New(ctx, sc.Type, sc.Name, scfg, sinks.Deps{Log: log, Getenv: env.Getenv, SpecVersion: sc.SpecVersion})
	if err != nil {
		return err
	}
	defer s.Close()
	checker, ok := s.(sinks.Checker)
	if !ok {
		fmt.Fprintf(out, "sink %s (%s) has no checks\n", sc.Name, sc.Type)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	failed := 0
	for _, ch := range checker.Check(cctx) {
		if ch.Err != nil {
			failed++
			fmt.Fprintf(out, "FAIL  %s: %s\n", ch.Name, schemas.RedactText(ch.Err.Error()))
		} else {
			fmt.Fprintf(out, "ok    %s\n", ch.Name)
		}
	}
	if failed > 0 {
		return fmt.Errorf("sink %s: %d checks failed", sc.Name, failed)
	}
	return nil
}
