package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/transformer"
)

// Env is what a process takes from the command that starts it.
type Env struct {
	Stderr io.Writer           // the log's destination
	Getenv func(string) string // the environment, for the sinks' secrets
	Sinks  sinks.Registry      // the sink types it knows
	// HTTPAddr, when set, receives the bound address of the HTTP endpoint
	// (tests listen on port 0).
	HTTPAddr chan<- string
	// API serves the inventory API beside the stages; Run calls it once
	// the pipeline is built, and stop waits for its end. Nil serves none.
	API func(ctx context.Context, p *Pipeline, log *zap.Logger) (stop func() error, err error)
}

// Run starts logging and the HTTP endpoint, builds the pipeline of the
// parts asked for, and calls body with it. It closes everything on return.
func Run(ctx context.Context, env Env, cfg Config, parts Parts, body func(ctx context.Context, p *Pipeline) error) error {
	log := NewLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(env.Stderr)))
	defer func() { _ = log.Sync() }()
	obs := newObserver()
	if err := withDefaultSinks(cfg).Validate(env.Sinks); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err) // before anything is created
	}
	ln, err := obs.listen(cfg.HTTP)
	if err != nil {
		return err
	}
	p, err := newPipeline(ctx, cfg, parts, env, log, obs)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	defer p.Close()
	hctx, stopHTTP := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := obs.serve(hctx, ln, log, env.HTTPAddr); err != nil {
			log.Error("http endpoint stopped", zap.Error(err))
		}
	})
	stopAPI := func() error { return nil }
	if env.API != nil {
		if stopAPI, err = env.API(hctx, p, log); err != nil {
			stopHTTP()
			wg.Wait()
			return err
		}
	}
	err = body(ctx, p)
	stopHTTP()
	wg.Wait()
	return errors.Join(err, stopAPI())
}

// Serve is `bomstream run` once the pipeline is built: it checks the
// store, then runs the stages with the source, a cluster or the manifests
// directory, until ctx ends; with manifests.once it syncs once, drains the
// pipeline, prints the summary to out and returns.
func Serve(ctx context.Context, p *Pipeline, cluster bool, out io.Writer) error {
	checkAtStart(ctx, p)
	if cluster {
		return runCluster(ctx, p, p.cfg.Manifests.Once, out)
	}
	if p.cfg.Manifests.Once {
		return runOnce(ctx, p, out)
	}
	return runWatch(ctx, p)
}

// runOnce syncs the manifests, waits until every stage has drained, and
// prints what was found.
func runOnce(ctx context.Context, p *Pipeline, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	res, loaded, syncErr := p.Watcher().Once(ctx)
	sourceDone(p)
	drainErr := p.waitDrained(ctx)
	cancel()
	runErr := <-done
	printSummary(out, p, res, loaded)
	for _, n := range loaded.Notes {
		p.log.Debug("skipped", zap.String("note", n.String()))
	}
	return errors.Join(syncErr, drainErr, runErr, leftBehind(context.WithoutCancel(ctx), p))
}

// leftBehind is an error when the run leaves something unexported: messages
// it dead-lettered, or dead letters of its stages still waiting from before.
// `run --once` then exits non-zero: its summary is not the whole truth.
func leftBehind(ctx context.Context, p *Pipeline) error {
	var now uint64
	if p.svc != nil {
		now += p.svc.Counts().DeadLettered
	}
	for _, s := range p.sinks {
		now += s.runner.Stats().DeadLettered
	}
	mine := map[string]bool{schemas.StageTransformer: p.svc != nil}
	for _, s := range p.sinks {
		mine[schemas.SinkStage(s.cfg.Name)] = true
	}
	waiting := 0
	if err := deadletter.New(p.bus).List(ctx, "", func(d deadletter.Letter) error {
		if mine[d.Stage] {
			waiting++
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read the dead-letter stream: %w", err)
	}
	switch {
	case now > 0:
		return fmt.Errorf("%d messages dead-lettered in this run, %d dead letters in all: see `bomstream dlq list`, then `bomstream dlq retry`", now, waiting)
	case waiting > 0:
		return fmt.Errorf("%d dead letters from earlier runs are still waiting: see `bomstream dlq list`, then `bomstream dlq retry`", waiting)
	}
	return nil
}

func runWatch(ctx context.Context, p *Pipeline) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	werr := p.Watcher().Run(ctx)
	cancel()
	return errors.Join(werr, <-done)
}

// printSummary prints one row per workload read, then the totals.
func printSummary(out io.Writer, p *Pipeline, res files.SyncResult, loaded files.Loaded) {
	type row struct{ workload, runtime, models, roles string }
	var rows []row
	boms := 0
	generic := map[string]int{} // kind -> serving workloads read by the generic profile
	rendered := p.rendered
	if rendered == nil {
		rendered = newSummaries(p.renderer)
	}
	for _, ev := range loaded.Events {
		r, err := rendered.of(ev)
		w := ev.Data.Workload
		name := w.Namespace + "/" + w.Kind + "/" + w.Name
		switch {
		case err != nil:
			rows = append(rows, row{name, "error: " + err.Error(), "", ""})
		case !r.serving:
			continue
		default:
			boms++
			rows = append(rows, row{name, RuntimesText(r.summary), orDash(strings.Join(r.summary.Models, ", ")), orDash(strings.Join(r.summary.Roles, ", "))})
			if in := ev.Data.Inputs; in != nil && in.Profile == schemas.ProfileGeneric {
				generic[genericKind(in.Workload)]++
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].workload < rows[j].workload })
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tRUNTIME\tMODELS\tROLES")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.workload, r.runtime, r.models, r.roles)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\n%d workloads read, %d serving (one BOM each), %d notes; %d new events, %d tombstones\n",
		res.Workloads, boms, res.Notes, res.Published, res.Tombstones)
	if len(generic) > 0 {
		kinds := make([]string, 0, len(generic))
		total := 0
		for k, n := range generic {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
			total += n
		}
		sort.Strings(kinds)
		fmt.Fprintf(out, "%d serving workloads of kinds with no profile, read by the generic profile: %s (docs/operating.md: add a profile)\n",
			total, strings.Join(kinds, ", "))
	}
	if res.Held > 0 {
		fmt.Fprintf(out, "%d tombstones held: more than the allowed share of the workloads is gone; run again to confirm, or pass --confirm-tombstones\n", res.Held)
	}
	for _, s := range p.sinks {
		st := s.runner.Stats()
		fmt.Fprintf(out, "sink %s: %d exported, %d tombstones, %d already exported, %d dead-lettered\n",
			s.cfg.Name, st.Exported, st.Tombstones, st.SkippedDuplicate, st.DeadLettered)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// genericKind is the label of a workload's kind: "Kind.group", or "Kind".
func genericKind(w schemas.Workload) string {
	group, _, ok := strings.Cut(w.APIVersion, "/")
	if !ok {
		return w.Kind
	}
	return w.Kind + "." + group
}

// RuntimesText is "vllm@0.8.5 (declared), nim (inferred)", or "no runtime".
func RuntimesText(s transformer.Summary) string {
	var rts []string
	for _, rt := range s.Runtimes {
		v := rt.Name
		if rt.Version != "" {
			v += "@" + rt.Version
		}
		rts = append(rts, v+" ("+rt.Confidence+")")
	}
	if len(rts) == 0 {
		return "no runtime"
	}
	return strings.Join(rts, ", ")
}
